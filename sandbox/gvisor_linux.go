package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// gvisor is tier 2: the box is a gVisor sandbox (runsc, systrap), whose
// system calls go to a kernel of its own. airlock writes the OCI bundle
// itself: a root it builds (the system read-only, the granted paths, a
// private /tmp, /var/tmp, /run and HOME), an environment built from the
// Spec alone, no capabilities, no network of its own (--network=none).
// airlock's init is the box's first process and starts the command; with
// network it runs the egress forwarder, which reaches the proxy through
// the socket's directory (planNet).
//
// Each box has a private directory of its own (gvisorBoxesDir) holding the
// bundle, runsc's state root, its log and the box's record (GVisorRecord);
// it is locked for the box's life and removed, with every process of the
// box, when the box closes. A box whose airlock died (SIGKILL) leaves an
// unlocked directory, and the next box planned reaps it: the processes in
// the cgroup its record names, and those with that directory's path on
// their command line (runsc hands its --root to the sandbox and the gofer
// it starts).
type gvisor struct {
	// warm plans a warm box (gvisor_warm_linux.go), whose filter also
	// refuses what its init cannot clear between calls.
	warm bool
}

var _ Mechanism = gvisor{}

func (gvisor) Tier() Tier   { return Tier2 }
func (gvisor) Name() string { return "gvisor" }

// gvisorPlatform is the only platform airlock starts gVisor on: systrap
// works rootless and as root without hardware support. KVM is never picked
// (nested /dev/kvm hangs at the first exec).
const gvisorPlatform = "systrap"

// gvisorBox is what a tier-2 Box holds beyond the common fields.
type gvisorBox struct {
	// warm is set for a warm box's plan (gvisor.warm).
	warm  bool
	runsc string
	// dir is the box's private directory; bundle is dir/bundle, whose
	// config.json CommandLine writes.
	dir, bundle, id string
	lock            *os.File
	spec            ociSpec
	// mkhome is a HOME inside the box's private /tmp, /var/tmp or /run,
	// made before the command starts; "" when none is needed.
	mkhome string
	// files counts the generated files written into the bundle.
	files int
	// launch is set when airlock's launcher binds the pinned sources
	// (as root): exe is the airlock binary it runs as, srcs what it binds.
	launch bool
	exe    string
	srcs   []gvSource
	// initFiles are the in-box init's configuration and status pipes,
	// passed in with runsc's --pass-fd (planInit).
	initFiles []*os.File
	// serve is the init's serving flags in a warm box (gvisor_warm_linux.go).
	serve []string
	// dry is set for a plan made only for its fingerprint: nothing of it
	// is written to disk (gvisor_warm_linux.go).
	dry bool
	// gen holds each generated file's digest by destination, links the
	// root's merged-/usr links: what the box is, for its fingerprint.
	gen   map[string]string
	links [][2]string
	// net is set for a box with network: runsc may connect to the host
	// sockets its mounts hold (--host-uds=open): the egress socket's
	// directory, every other socket covered (coverSocket).
	net bool
	// cover is the empty read-only file bound over each other socket.
	cover  *pinned
	closed bool
}

// gvSource is one pinned bind source: the launcher (sandbox/boxinit)
// binds f at Target (inside the box's directory) in a mount namespace of
// runsc's own, checks that Target is then the pinned inode, and runsc
// takes Target by path.
type gvSource struct {
	f *os.File
	boxconf.GVisorSource
}

// source is the path runsc is given for the pinned pn: with the
// launcher, a place in the box's directory the pinned inode is bound to
// just before runsc starts, so a link swapped in after planning changes
// nothing; without it (rootless), the resolved path.
func (g *gvisorBox) source(pn *pinned, rw bool) (string, error) {
	if !g.launch {
		return pn.real, nil
	}
	target := filepath.Join(g.dir, "src", strconv.Itoa(len(g.srcs)))
	var err error
	if g.dry {
		// Nothing is made: the path is what the box would be given.
	} else if pn.isDir() {
		err = os.Mkdir(target, 0o700)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "sandbox tier 2: bind source")
	}
	g.srcs = append(g.srcs, gvSource{f: pn.f, GVisorSource: boxconf.GVisorSource{Target: target, Dev: pn.dev, Ino: pn.ino, ReadOnly: !rw}})
	return target, nil
}

func bindOpts(rw bool) []string {
	if rw {
		return []string{"rbind", "rw"}
	}
	return []string{"rbind", "ro"}
}

func (m gvisor) plan(spec Spec, exe string) (*Box, error) { return m.planBox(spec, exe, false) }

// planBox plans the box; dry plans it for its fingerprint only, with no
// box directory (gvisor_warm_linux.go).
func (m gvisor) planBox(spec Spec, exe string, dry bool) (*Box, error) {
	if spec.Ptrace {
		return nil, errs.Unavailablef("sandbox tier 2: sandbox.ptrace is not offered in a gVisor box (use --sandbox 1)")
	}
	gv := probeRunsc(os.Getenv("PATH"), spec.Caches)
	if !gv.Usable {
		return nil, errs.Unavailablef("sandbox tier 2: %s (%s)", gv.Why, gv.Fix)
	}
	if exe == "" || !filepath.IsAbs(exe) {
		return nil, errs.Invalidf("sandbox: the airlock binary path %q is not absolute", exe)
	}
	var g *gvisorBox
	var err error
	if dry {
		g = dryGVisorBox(gv.Path)
	} else {
		reapGVisor()
		g, err = newGVisorBox(gv.Path)
	}
	if err != nil {
		return nil, err
	}
	g.exe, g.launch, g.warm = exe, os.Geteuid() == 0, m.warm
	b := &Box{Tier: Tier2, Path: gv.Path, Mechanism: m.Name(), Version: gv.Version, gv: g,
		Namespaces: []string{"gvisor", "pid", "mount", "ipc", "uts", "net"}}
	if err := planGVisor(b, spec, exe); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// gvisorBoxesDir holds one private directory per tier-2 box:
// $XDG_RUNTIME_DIR/airlock/gvisor, else /tmp/airlock-<uid>/gvisor (beside
// the stub locks, so every airlock process of a user agrees on it).
func gvisorBoxesDir() string { return filepath.Join(filepath.Dir(stubLockDir()), "gvisor") }

// newGVisorBox makes the box's private directory and locks it.
func newGVisorBox(runsc string) (*gvisorBox, error) {
	base := gvisorBoxesDir()
	if err := privateDir(filepath.Dir(base)); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox tier 2: state directory")
	}
	if err := privateDir(base); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox tier 2: state directory")
	}
	var rb [8]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, err
	}
	id := "airlock-" + hex.EncodeToString(rb[:])
	dir := filepath.Join(base, id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox tier 2: box directory")
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.RemoveAll(dir)
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox tier 2: lock the box directory")
	}
	g := &gvisorBox{runsc: runsc, dir: dir, bundle: filepath.Join(dir, "bundle"), id: id, lock: lock}
	if err := g.record(GVisorRecord{ID: id, Pid: os.Getpid()}); err != nil {
		g.close()
		return nil, err
	}
	for _, d := range []string{g.bundle, filepath.Join(dir, "state"), filepath.Join(dir, "src"), filepath.Join(g.bundle, "root"), filepath.Join(g.bundle, "etc")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			g.close()
			return nil, errs.Wrap(errs.Unavailable, err, "sandbox tier 2: box directory")
		}
	}
	return g, nil
}

// GVisorRecord is what airlock keeps of a tier-2 box it started, in the
// box's directory (gvisorRecordFile): the sandbox's id, the airlock
// process that started it, and the cgroup the run placed runsc in. A later
// airlock reaps a box whose directory nobody holds locked by these.
type GVisorRecord struct {
	ID      string   `json:"id"`
	Pid     int      `json:"pid"`
	Cgroups []string `json:"cgroups,omitempty"`
}

// gvisorRecordFile names the record in a box's directory.
const gvisorRecordFile = "box.json"

// record writes r as the box's record, replacing any earlier one whole.
func (g *gvisorBox) record(r GVisorRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(g.dir, gvisorRecordFile+".new")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: record the box")
	}
	if err := os.Rename(tmp, filepath.Join(g.dir, gvisorRecordFile)); err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: record the box")
	}
	return nil
}

// RecordCgroup adds to a tier-2 box's record the cgroup directories the
// run placed runsc in, so that a later airlock can end what is left in
// them should this one die. Other tiers ignore it.
func (b *Box) RecordCgroup(dirs []string) error {
	g := b.gv
	if g == nil || g.closed {
		return nil
	}
	return g.record(GVisorRecord{ID: g.id, Pid: os.Getpid(), Cgroups: dirs})
}

// ReadGVisorRecord reads the record in the tier-2 box directory dir.
func ReadGVisorRecord(dir string) (GVisorRecord, error) {
	var r GVisorRecord
	data, err := os.ReadFile(filepath.Join(dir, gvisorRecordFile))
	if err != nil {
		return r, err
	}
	err = json.Unmarshal(data, &r)
	return r, err
}

// GVisorBoxesDir is the directory holding one directory per tier-2 box of
// this user (see gvisorBoxesDir).
func GVisorBoxesDir() string { return gvisorBoxesDir() }

// The OCI runtime spec, as much of it as airlock writes.
type ociSpec struct {
	Version  string     `json:"ociVersion"`
	Process  ociProcess `json:"process"`
	Root     ociRoot    `json:"root"`
	Hostname string     `json:"hostname"`
	Mounts   []ociMount `json:"mounts"`
	Linux    ociLinux   `json:"linux"`
}

type ociProcess struct {
	Terminal        bool        `json:"terminal"`
	User            ociUser     `json:"user"`
	Args            []string    `json:"args"`
	Env             []string    `json:"env"`
	Cwd             string      `json:"cwd"`
	Capabilities    ociCaps     `json:"capabilities"`
	NoNewPrivileges bool        `json:"noNewPrivileges"`
	Rlimits         []ociRlimit `json:"rlimits,omitempty"`
}

type ociUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// ociCaps are all empty: the box's processes have no capability in
// gVisor's kernel, uid 0 included (an empty bounding set leaves execve
// nothing to grant).
type ociCaps struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Inheritable []string `json:"inheritable"`
	Permitted   []string `json:"permitted"`
	Ambient     []string `json:"ambient"`
}

type ociRlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociLinux struct {
	Namespaces []ociNamespace `json:"namespaces"`
	Seccomp    *ociSeccomp    `json:"seccomp,omitempty"`
}

// ociSeccomp is a filter gVisor's kernel applies to the box's calls
// (runsc --oci-seccomp): the same classes tier 1's host filter refuses that
// reach anything through gVisor — new namespaces, and set-ID modes, which
// the gofer would write to the host's file as its own root.
type ociSeccomp struct {
	DefaultAction string       `json:"defaultAction"`
	Syscalls      []ociSyscall `json:"syscalls"`
}

type ociSyscall struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []ociArg `json:"args,omitempty"`
}

type ociArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// gvisorSeccomp is the box's filter in gVisor's kernel; warm is a warm
// box's.
func gvisorSeccomp(warm bool) *ociSeccomp {
	eperm := uint(unix.EPERM)
	f := &ociSeccomp{DefaultAction: "SCMP_ACT_ALLOW"}
	refuse := func(names []string, errno *uint, args ...ociArg) {
		f.Syscalls = append(f.Syscalls, ociSyscall{Names: names, Action: "SCMP_ACT_ERRNO", ErrnoRet: errno, Args: args})
	}
	// Any bit of the mask set: one rule per bit, since a rule's
	// arguments all have to hold and rules are alternatives.
	anyBit := func(names []string, index uint, mask uint64) {
		for b := uint64(1); b != 0 && b <= mask; b <<= 1 {
			if mask&b != 0 {
				refuse(names, &eperm, ociArg{Index: index, Value: b, ValueTwo: b, Op: "SCMP_CMP_MASKED_EQ"})
			}
		}
	}
	refuse([]string{"unshare", "setns"}, &eperm)
	anyBit([]string{"clone"}, 0, unix.CLONE_NEWNS|unix.CLONE_NEWCGROUP|unix.CLONE_NEWUTS|unix.CLONE_NEWIPC|unix.CLONE_NEWUSER|unix.CLONE_NEWPID|unix.CLONE_NEWNET)
	// openat2's mode lies behind a pointer, out of a filter's reach.
	// gVisor answers every refusal with EPERM (it ignores errnoRet), so
	// clone3 cannot be sent back to clone with ENOSYS as tier 1 does:
	// it stays allowed, and a namespace it makes is one of gVisor's
	// kernel, never the host's.
	refuse([]string{"openat2"}, &eperm)
	const setid = unix.S_ISUID | unix.S_ISGID
	for _, m := range []struct {
		names []string
		arg   uint
	}{
		{[]string{"chmod", "fchmod", "creat", "mkdir", "mknod"}, 1},
		{[]string{"fchmodat", "fchmodat2", "open", "mkdirat", "mknodat"}, 2},
		{[]string{"openat"}, 3},
	} {
		anyBit(m.names, m.arg, setid)
	}
	if warm {
		// A POSIX message queue outlives every process, in the box's IPC
		// namespace, as long as the box; runsc mounts no mqueue file
		// system to list and empty, so a queue one call made would carry
		// its name and messages to the next. Without mq_open none is
		// made (a cold box's queues end with it).
		refuse([]string{"mq_open"}, &eperm)
	}
	return f
}

type ociNamespace struct {
	Type string `json:"type"`
}

// gvMount is one mount of the box, ordered like tier 1's: a parent before
// what is mounted inside it.
type gvMount struct {
	m     ociMount
	order int
}

// planGVisor fills b's OCI spec from spec: the same grants, environment,
// working directory and protected paths tier 1 gives, planned by the same
// steps (pinRoots and pinGrants, pin_linux.go): the bubblewrap operations
// they make become the box's OCI mounts (gvisorBox.mount), so a rule added
// to the pinning holds at both tiers.
//
// runsc takes bind sources by path. As root, every source is a place in
// the box's directory that airlock's launcher binds the pinned inode to
// (gvisorBox.source; the launcher is in sandbox/boxinit), so a link
// swapped in after the check changes nothing, as at tier 1. Rootless, the
// launcher cannot make a mount namespace: each source is the resolved
// path, checked here as at tier 1, and runsc's gofer opens it moments
// later; the box's Notes say so.
func planGVisor(b *Box, spec Spec, exe string) error {
	g := b.gv
	p := &planner{spec: spec, box: b, bw: bwrapInfo{BindFD: true}, direct: true}
	gr, err := p.pinRoots()
	if err != nil {
		return err
	}
	wd := gr.wd

	// The system, read-only; a merged-/usr link is made in the root.
	var links [][2]string
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(d)
			if err != nil {
				return err
			}
			links = append(links, [2]string{target, d})
			continue
		}
		pn, err := pin(d, p.writable)
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox: system directory")
		}
		p.bindFD(pn, d, false, 2)
	}
	for _, f := range etcPaths() {
		if _, err := os.Lstat(f); err != nil {
			continue
		}
		pn, err := pin(f, p.writable)
		if err != nil {
			// A system file that cannot be pinned safely is left out.
			b.Notes = append(b.Notes, err.Error())
			continue
		}
		p.bindFD(pn, f, false, 2)
	}
	home := EnvValue(spec.Env, "HOME")
	if err := p.etcData(home); err != nil {
		return err
	}
	mounts := []gvMount{
		// Read-only, as at tier 1: no process writes another's memory
		// through /proc/PID/mem. It is gVisor's own /proc: the host's
		// kernel state (keyrings, kcore, sysrq) is not in it.
		{ociMount{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"ro", "nosuid", "noexec", "nodev"}}, 0},
		{ociMount{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=755"}}, 0},
		{ociMount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}}, 0},
		{ociMount{Destination: "/var/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}}, 0},
		{ociMount{Destination: "/run", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=755"}}, 0},
	}

	// The in-box code (airlock-box, else the airlock binary), read-only
	// and never from a writable directory (CVE-2019-5736).
	ex, err := p.pinInit(exe)
	if err != nil {
		return err
	}
	p.bindFD(ex, boxInitPath, false, 2)

	if err := p.pinGrants(gr, home); err != nil {
		return err
	}
	if err := g.planInit(p, wd.real); err != nil {
		return err
	}
	if spec.Net != nil {
		if err := g.planNet(p, ex); err != nil {
			return err
		}
	}

	// The operations in tier 1's order, parents first: a cover of a
	// socket is made inside the tree it lies in (gvisorBox.mount).
	sortOps(p.ops)
	for _, o := range p.ops {
		if err := g.mount(b, o, &mounts); err != nil {
			return err
		}
	}
	sort.SliceStable(mounts, func(i, j int) bool {
		di, dj := depth(mounts[i].m.Destination), depth(mounts[j].m.Destination)
		if di != dj {
			return di < dj
		}
		return mounts[i].order < mounts[j].order
	})
	for _, m := range mounts {
		g.spec.Mounts = append(g.spec.Mounts, m.m)
		if err := g.mountPoint(m.m); err != nil {
			return err
		}
	}
	g.links = links
	for _, l := range links {
		if g.dry {
			break
		}
		if err := os.Symlink(l[0], filepath.Join(g.bundle, "root", l[1])); err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: root")
		}
	}

	env := append([]string(nil), spec.Env...)
	if EnvValue(env, "PWD") == "" {
		env = append(env, "PWD="+wd.real)
	}
	g.spec.Version = "1.0.2"
	g.spec.Hostname = "airlock"
	g.spec.Root = ociRoot{Path: filepath.Join(g.bundle, "root"), Readonly: true}
	g.spec.Process.User = ociUser{UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	// The init's own environment: the command's comes through its
	// configuration (planInit). One P is all the init needs, and fewer
	// runtime threads start faster in gVisor's kernel.
	g.spec.Process.Env = []string{"GOMAXPROCS=1"}
	g.spec.Process.Cwd = wd.real
	g.spec.Process.NoNewPrivileges = true
	if n := spec.Limits.Pids; n > 0 {
		// The process limit is gVisor's to count: every task of the box
		// is its user's (see runner's hostLimits).
		g.spec.Process.Rlimits = []ociRlimit{{Type: "RLIMIT_NPROC", Hard: uint64(n), Soft: uint64(n)}}
	}
	g.spec.Process.Capabilities = ociCaps{Bounding: []string{}, Effective: []string{}, Inheritable: []string{}, Permitted: []string{}, Ambient: []string{}}
	g.spec.Linux.Namespaces = []ociNamespace{{"pid"}, {"network"}, {"ipc"}, {"uts"}, {"mount"}}
	g.spec.Linux.Seccomp = gvisorSeccomp(g.warm)
	b.Seccomp = true

	// The command check (CheckCommand) is tier 1's: what the box sees at
	// the same place as the host.
	b.direct = false // airlock's init starts the command (planInit)
	b.visible = p.visible()
	b.boxOnly = p.boxOnly
	b.env = env
	b.workdir = wd.real
	b.Notes = append(b.Notes, "tier 2: gVisor ("+gvisorPlatform+"), the box's system calls went to gVisor's kernel, not the host's")
	if !g.launch {
		b.Notes = append(b.Notes, "tier 2 without root: bind sources were resolved and checked by path when the box was planned, not pinned")
	}
	return nil
}

// mount turns one bubblewrap operation of the shared planner into a mount
// of the box: a bind of a pinned descriptor, a generated file, a private
// directory for HOME, or the cover of a socket.
func (g *gvisorBox) mount(b *Box, o op, mounts *[]gvMount) error {
	a := o.args
	switch {
	case len(a) == 3 && (a[0] == "--ro-bind-fd" || a[0] == "--bind-fd") && o.pn != nil:
		rw := a[0] == "--bind-fd"
		src, err := g.source(o.pn, rw)
		if err != nil {
			return err
		}
		*mounts = append(*mounts, gvMount{ociMount{Destination: a[2], Type: "bind", Source: src, Options: bindOpts(rw)}, o.order})
	case len(a) == 3 && a[0] == "--ro-bind" && a[1] == "/dev/null":
		// A socket tier 1 covers. Without network runsc never connects
		// to a host socket (no --host-uds), so there is nothing to cover;
		// with it, every socket but the proxy's is covered on the host.
		if g.net {
			return g.coverSocket(a[2], *mounts)
		}
	case len(a) == 5 && a[0] == "--perms" && a[2] == "--ro-bind-data":
		// A generated file (/etc's, the .git/info/exclude naming the
		// placeholders): read from its pipe into the bundle.
		n, err := strconv.Atoi(a[3])
		if err != nil {
			return err
		}
		return g.dataMount(b, n, a[4], o.order, mounts)
	case len(a) == 2 && a[0] == "--tmpfs":
		*mounts = append(*mounts, gvMount{ociMount{Destination: a[1], Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=700"}}, o.order})
	case len(a) == 2 && a[0] == "--dir" && (within(a[1], "/tmp") || within(a[1], "/var/tmp") || within(a[1], "/run")):
		// HOME inside a private tmpfs: made before the command.
		g.mkhome = a[1]
	default:
		return errs.New(errs.Internal, "sandbox tier 2: operation %q has no gVisor form", a)
	}
	return nil
}

// dataMount binds at dest a generated file whose content the planner put
// in a pipe: descriptor n of the box (ExtraFiles[n-3]), already complete.
func (g *gvisorBox) dataMount(b *Box, n int, dest string, order int, mounts *[]gvMount) error {
	if n < 3 || n-3 >= len(b.ExtraFiles) {
		return errs.New(errs.Internal, "sandbox tier 2: generated file %s: no descriptor %d", dest, n)
	}
	data, err := io.ReadAll(io.LimitReader(b.ExtraFiles[n-3], 64<<10))
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: generated file %s", dest)
	}
	g.files++
	src := filepath.Join(g.bundle, "etc", "data-"+strconv.Itoa(g.files))
	g.digest(dest, data)
	if g.dry {
		*mounts = append(*mounts, gvMount{ociMount{Destination: dest, Type: "bind", Source: src, Options: []string{"rbind", "ro"}}, order})
		return nil
	}
	if err := os.WriteFile(src, data, 0o444); err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: generated file %s", dest)
	}
	*mounts = append(*mounts, gvMount{ociMount{Destination: dest, Type: "bind", Source: src, Options: []string{"rbind", "ro"}}, order})
	return nil
}

// mountPoint makes what m is mounted on inside the root, which is
// read-only and otherwise empty: a directory, or an empty file for a file.
func (g *gvisorBox) mountPoint(m ociMount) error {
	if g.dry {
		return nil
	}
	dst := filepath.Join(g.bundle, "root", m.Destination)
	isDir := true
	if m.Type == "bind" {
		st, err := os.Stat(m.Source)
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: bind source")
		}
		isDir = st.IsDir()
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: root")
	}
	if isDir {
		if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: root")
		}
		return nil
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o444)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: root")
	}
	return f.Close()
}

// GVisorCommand writes the box's OCI spec with argv as its process and
// returns runsc's command line. It is the tier-2 counterpart of
// CommandLine.
func (b *Box) GVisorCommand(argv []string) ([]string, error) {
	g := b.gv
	if g == nil || g.closed {
		return nil, errs.New(errs.Internal, "sandbox: not a tier-2 box")
	}
	// airlock's init is the box's first process; the command comes with
	// its configuration (Box.SendConfig).
	g.spec.Process.Args = []string{boxInitPath, InitArg,
		boxconf.FlagConfig, strconv.Itoa(gvisorInitFD), boxconf.FlagStatus, strconv.Itoa(gvisorInitFD + 1)}
	g.spec.Process.Args = append(g.spec.Process.Args, g.serve...)
	data, err := json.Marshal(g.spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(g.bundle, "config.json"), data, 0o600); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox tier 2: bundle")
	}
	args := []string{g.runsc,
		"--root", filepath.Join(g.dir, "state"),
		"--platform", gvisorPlatform,
		"--network", "none",
		// airlock's runner places runsc in the run's own cgroup; runsc
		// makes none.
		"--ignore-cgroups",
		// The root is the read-only directory airlock built; no overlay
		// makes it writable.
		"--overlay2", "none",
		// The spec's filter runs in gVisor's kernel (gvisorSeccomp).
		"--oci-seccomp",
		"--log", filepath.Join(g.dir, "runsc.log"),
	}
	if os.Geteuid() != 0 {
		args = append(args, "--rootless")
	}
	if g.net {
		// The forwarder connects to the proxy's socket; every other
		// socket the mounts hold is covered (coverSocket).
		args = append(args, "--host-uds", "open")
	}
	args = append(args, "run", "--bundle", g.bundle)
	// The init's pipes follow the launcher's descriptors (see
	// GVisorFiles).
	first := 3
	if g.launch {
		first = 4 + len(g.srcs)
	}
	for i := range g.initFiles {
		args = append(args, "--pass-fd", fmt.Sprintf("%d:%d", first+i, gvisorInitFD+i))
	}
	args = append(args, g.id)
	if !g.launch {
		return args, nil
	}
	// airlock's launcher binds the pinned sources, then becomes runsc.
	return append([]string{g.exe, InitArg, boxconf.GVisorLaunchArg, "--"}, args...), nil
}

// GVisorFiles are the descriptors runsc's launcher inherits, from 3: its
// configuration, then the pinned sources. Nil without the launcher.
func (b *Box) GVisorFiles() ([]*os.File, error) {
	g := b.gv
	if g == nil {
		return nil, nil
	}
	if !g.launch {
		return g.initFiles, nil
	}
	files := []*os.File{nil}
	var list []boxconf.GVisorSource
	for i := range g.srcs {
		g.srcs[i].FD = 4 + i
		files = append(files, g.srcs[i].f)
		list = append(list, g.srcs[i].GVisorSource)
	}
	data, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go func() {
		// The list can outgrow a pipe's buffer; the launcher reads it
		// all first.
		w.Write(data)
		w.Close()
	}()
	b.keep = append(b.keep, r)
	files[0] = r
	return append(files, g.initFiles...), nil
}

// GVisorFailure is runsc's own account of a box that did not start, from
// its log, or "" when it has none.
func (b *Box) GVisorFailure() string {
	if b.gv == nil {
		return ""
	}
	f, err := os.Open(filepath.Join(b.gv.dir, "runsc.log"))
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	var last string
	for _, l := range strings.Split(string(data), "\n") {
		// runsc writes JSON lines ({"msg":…,"level":…}) or text ones.
		var j struct{ Msg, Level string }
		if json.Unmarshal([]byte(l), &j) == nil && j.Msg != "" {
			if j.Level == "error" || j.Level == "fatal" || runscFailure(j.Msg) {
				last = j.Msg
			}
			continue
		}
		if strings.Contains(l, "FATAL") || runscFailure(l) {
			last = l
		}
	}
	return strings.TrimSpace(last)
}

// runscFailure reports whether a line of runsc's log tells why a
// container did not run.
func runscFailure(l string) bool {
	return strings.Contains(l, "running container") || strings.Contains(l, "creating container") || strings.Contains(l, "starting container")
}

// close ends every process of the box and removes its directory.
func (g *gvisorBox) close() {
	if g == nil || g.closed {
		return
	}
	g.closed = true
	if g.cover != nil {
		g.cover.f.Close()
	}
	if g.dry {
		return // no process, no directory
	}
	killGVisor(g.dir)
	os.RemoveAll(g.dir)
	if g.lock != nil {
		g.lock.Close()
	}
}

// killGVisor ends every host process of the box whose directory is dir
// (runsc, its sandbox and gofer, which all carry --root dir/state) and
// waits for them to be gone.
func killGVisor(dir string) {
	marker := []byte(filepath.Join(dir, "state"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := processesWith(marker)
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// processesWith lists the live processes whose command line holds marker.
func processesWith(marker []byte) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie
		}
		if containsArg(b, marker) {
			out = append(out, pid)
		}
	}
	return out
}

// containsArg reports whether a NUL-separated command line has an argument
// that is marker or starts with marker (--root=marker spelled either way).
func containsArg(cmdline, marker []byte) bool {
	for _, a := range strings.Split(string(cmdline), "\x00") {
		a = strings.TrimPrefix(a, "--root=")
		if a == string(marker) {
			return true
		}
	}
	return false
}

// reapGVisor removes the boxes of airlock processes that died: a box
// directory nobody holds locked.
func reapGVisor() {
	base := gvisorBoxesDir()
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "airlock-") {
			continue
		}
		dir := filepath.Join(base, e.Name())
		f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				// A directory being made right now has its lock within
				// microseconds; an old one without a lock is debris.
				if st, serr := os.Stat(dir); serr == nil && time.Since(st.ModTime()) > time.Minute {
					killGVisor(dir)
					os.RemoveAll(dir)
				}
			}
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			if r, err := ReadGVisorRecord(dir); err == nil {
				for _, cg := range r.Cgroups {
					reapCgroup(cg)
				}
			}
			killGVisor(dir)
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

// reapCgroup ends every process in the recorded cgroup directory dir of
// a dead run (its sandbox, gofer and their helpers) and removes it, when
// it is one of airlock's (named airlock-<pid>-… under /sys/fs/cgroup).
func reapCgroup(dir string) {
	if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), "airlock-") || !within(filepath.Clean(dir), "/sys/fs/cgroup") {
		return
	}
	version := "v1"
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err == nil {
		version = "v2"
	}
	killCgroup(version, dir)
	unix.Rmdir(dir)
}

// ReapGVisor removes what tier-2 boxes of dead airlock processes left:
// their processes and directories. A kernel calls it when it starts;
// planning a tier-2 box does too.
func ReapGVisor() { reapGVisor() }

// boxEgressDir is where a tier-2 box sees the egress socket's directory.
// gVisor binds no socket by itself, so the directory is bound: the
// proxy's own for this run, holding that socket alone.
const boxEgressDir = "/run/airlock/egress"

// gvisorInitFD is the first descriptor the in-box init gets through
// runsc's --pass-fd: its configuration, then its status.
const gvisorInitFD = 3

// planInit makes airlock's init the box's first process, as tier 1 does
// for a box with network: it starts the command, and its status tells a
// command's end from the end of gVisor's kernel (a Sentry killed
// mid-call ends runsc as a SIGKILLed command would).
func (g *gvisorBox) planInit(p *planner, wd string) error {
	b := p.box
	// The init's configuration in, its status out; the runner hands them
	// over after runsc starts (Box.SendConfig, Box.ReadStatus).
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return err
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		return err
	}
	b.configW, b.statusR = cfgW, stR
	b.child = append(b.child, cfgR, stW)
	g.initFiles = []*os.File{cfgR, stW}
	b.config.Env = append([]string(nil), p.spec.Env...)
	b.config.Dir = wd
	// gVisor's kernel applies the box's filter (--oci-seccomp) to the
	// init and the command alike, and its device numbers are its own:
	// the launcher checked the binds on the host.
	b.config.Seccomp, b.config.Pins = false, nil
	return nil
}

// planNet gives the box the egress forwarder: airlock's init runs it, as
// at tier 1, and reaches the proxy through the socket's directory.
func (g *gvisorBox) planNet(p *planner, ex *pinned) error {
	b := p.box
	pn, err := p.pinProxy()
	if err != nil {
		return err
	}
	defer pn.f.Close() // its directory is bound, not the socket
	dir, name := filepath.Split(pn.real)
	dir = filepath.Clean(dir)
	if !strings.HasPrefix(filepath.Base(dir), "airlock-egress-") {
		return p.refuse(dir, "the egress socket is not in a directory of its own; a gVisor box reaches it through its directory")
	}
	dpn, err := pin(dir, p.writable)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: egress socket directory")
	}
	if err := onlyEntry(dpn, name); err != nil {
		dpn.f.Close()
		return p.refuse(dir, err.Error())
	}
	p.bindFD(dpn, boxEgressDir, false, 2)
	if err := p.bindConnect(ex); err != nil {
		return err
	}
	if !g.launch {
		b.Notes = append(b.Notes, "tier 2 without root: a socket in the granted trees cannot be covered, so a box with network is refused where the walk finds one")
	}
	b.config.Net = p.netConfig(boxEgressDir + "/" + name)
	// A socket of gVisor's kernel cannot be handed to the host's proxy:
	// the forwarder carries the bytes.
	b.config.Net.Copy = true
	g.net = true
	return nil
}

// onlyEntry makes sure the pinned directory holds name and nothing else:
// --host-uds=open lets the box connect to any socket its mounts hold.
func onlyEntry(dir *pinned, name string) error {
	fd, err := unix.Openat(int(dir.f.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the egress socket's directory cannot be read: %v", err)
	}
	f := os.NewFile(uintptr(fd), dir.real)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("the egress socket's directory cannot be read: %v", err)
	}
	if len(names) != 1 || names[0] != name {
		return fmt.Errorf("the egress socket's directory holds %d entries, not the socket alone", len(names))
	}
	return nil
}

// coverSocket hides the host socket at box path sock from a box whose
// runsc may connect to host sockets: the launcher binds an empty
// read-only file over it inside the tree that holds it, on the host side,
// before runsc starts (as tier 1 binds /dev/null over it). mounts holds
// the box's mounts so far, parents first.
func (g *gvisorBox) coverSocket(sock string, mounts []gvMount) error {
	var tree *ociMount
	for i := range mounts {
		m := &mounts[i].m
		if m.Type == "bind" && within(sock, m.Destination) && (tree == nil || len(m.Destination) > len(tree.Destination)) {
			tree = m
		}
	}
	if tree == nil {
		return nil // not in a host tree the box sees
	}
	if !g.launch {
		return errs.Unavailablef("sandbox tier 2: %s: a Unix socket in a granted tree cannot be hidden from a gVisor box with network without root (use --sandbox 1, or remove the socket)", sock)
	}
	if !within(tree.Source, filepath.Join(g.dir, "src")) {
		return errs.New(errs.Internal, "sandbox tier 2: socket %s lies in %s, which the launcher did not bind", sock, tree.Destination)
	}
	if g.cover == nil {
		path := filepath.Join(g.dir, "cover")
		if err := os.WriteFile(path, nil, 0o444); err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: socket cover")
		}
		pn, err := pin(path, nil)
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox tier 2: socket cover")
		}
		g.cover = pn
	}
	target := tree.Source + strings.TrimPrefix(sock, tree.Destination)
	if tree.Destination == "/" {
		target = filepath.Join(tree.Source, sock)
	}
	g.srcs = append(g.srcs, gvSource{f: g.cover.f, GVisorSource: boxconf.GVisorSource{Target: target, Dev: g.cover.dev, Ino: g.cover.ino, ReadOnly: true}})
	return nil
}

// argv is the command the box runs for argv: HOME inside a private tmpfs
// is made by a shell first, with the command's own arguments passed
// through.
func (g *gvisorBox) argv(argv []string) []string {
	if g.mkhome == "" {
		return append([]string(nil), argv...)
	}
	return append([]string{"/bin/sh", "-c", `mkdir -p -- "$1" && shift && exec "$@"`, "sh", g.mkhome}, argv...)
}
