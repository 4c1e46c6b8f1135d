package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/sandbox/boxconf"
	"github.com/airlock-run/airlock/sandbox/seccomp"
)

// Paths inside the box that airlock itself uses. /run is the box's own
// tmpfs, so nothing here touches the host.
const (
	// InitPath is where the in-box code is inside the box (read-only):
	// airlock-box when it lies beside the airlock binary and passes the
	// checks of initbin_linux.go, else the airlock binary itself. The
	// box's programs may run it, for instance as a proxy command.
	InitPath     = "/run/airlock/airlock"
	boxInitPath  = InitPath
	boxProxyPath = "/run/airlock/egress.sock"
	boxConnPath  = "/run/airlock/bin/airlock-connect"
	// InitArg is the hidden argument of the in-box init (boxinit.Arg; kept
	// here so this package does not import the in-box code).
	InitArg = "__airlock-box-init"
)

// Forwarder ports inside the box's own network namespace.
const (
	boxHTTPPort  = 3128
	boxSOCKSPort = 1080
)

// systemDirs are bound read-only (or recreated as the same symbolic link
// when the host has merged /usr).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the parts of /etc a program needs. The rest of /etc (keys,
// shadow, credentials of services) does not exist inside the box.
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates.conf", "/etc/pki/tls/certs",
	"/etc/alternatives", "/etc/localtime", "/etc/timezone",
	"/etc/protocols", "/etc/services", "/etc/mime.types",
	"/etc/os-release", "/etc/debian_version", "/etc/lsb-release",
	"/etc/bash.bashrc", "/etc/profile", "/etc/inputrc", "/etc/terminfo",
	"/etc/magic", "/etc/mailcap",
	// Runtimes' own configuration: the JDK (java.security, jvm.cfg; its
	// conf directory is a link into /etc/java-NN-openjdk), Maven's m2.conf,
	// Python's sitecustomize, fontconfig, the resolver's preferences and
	// the CA store's source list. None holds a credential; files that may
	// (/etc/npmrc, /etc/pip.conf, /etc/gitconfig) stay out.
	"/etc/java-*", "/etc/maven", "/etc/python3*", "/etc/fonts",
	"/etc/ca-certificates", "/etc/gai.conf", "/etc/host.conf",
}

// refusedWrite are places a write grant may never reach: the system, and
// the kernel's interfaces.
var refusedWrite = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/proc", "/sys", "/dev", "/run", "/var/run"}

// Box is a planned box: how to start bubblewrap and what to clean up.
// The runner checks the command (CheckCommand), starts Path with
// CommandLine(argv), an empty environment and ExtraFiles (the i-th file
// becomes descriptor 3+i), then calls Started and SendConfig, and after
// bubblewrap has ended ReadStatus (unless Direct) and Close.
//
// Two shapes: bubblewrap starts the command itself under airlock's filter
// (Direct), which saves starting an init; with network its exec step hands
// the forwarder's listeners to the host first (NetHost, net_linux.go).
// Where that cannot be (no --ro-bind-fd, no Landlock, a warm box),
// airlock's init is the box's PID 1: it runs the egress forwarder, checks
// every bind from inside, installs the filter and starts the command.
type Box struct {
	Tier Tier
	// Path is bubblewrap's path.
	Path string
	// Argv is bubblewrap's command line; options travel in a descriptor.
	Argv []string
	// ExtraFiles are the descriptors bubblewrap inherits, from 3.
	ExtraFiles []*os.File
	// Mechanism and Version name what confines the box.
	Mechanism, Version string
	// Namespaces are those the box gets.
	Namespaces []string
	// Protected reports whether protected paths are enforced (read-only
	// binds inside writable directories).
	Protected bool
	// Seccomp reports whether the in-box init installs the filter.
	Seccomp bool
	// Notes say what a reader of the evidence should know.
	Notes []string
	// Stubs are placeholders airlock made in writable directories for
	// protected paths that did not exist; they are removed by Close (and by
	// the runner's guard when the runner dies).
	Stubs []Stub
	// Quarantined says, after Close, which repositories the run made and
	// what of them airlock moved aside (the host's git would have trusted
	// their config and hooks).
	Quarantined []string
	// RunAs, when not nil, is the user and group bubblewrap must be
	// started as (airlock runs as root on another user's checkout); nil
	// is airlock's own.
	RunAs *RunAs

	config  boxconf.Config
	configW *os.File
	statusR *os.File
	child   []*os.File      // closed in Started
	keep    []*os.File      // pinned descriptors, closed in Close
	locks   []*os.File      // shared flocks on the stubs, released in Close
	infoR   *os.File        // bubblewrap's --info-fd, when there are stubs
	direct  bool            // bubblewrap starts the command; no init
	visible []string        // host paths seen at the same place inside
	boxOnly map[string]bool // box paths bound from another host path
	env     []string        // the command's environment (direct boxes)
	workdir string
	gv      *gvisorBox // tier 2 only (gvisor_linux.go)
	options []string   // bubblewrap's options (Fingerprint)
	control *os.File   // a warm box's control socket (warm_linux.go)
	ownTmp  []string   // a warm box's own file systems no later mount covers (ownMounts)
	watch   *repoWatch // repositories known at plan time (gitprot_linux.go)
	initBin string     // the host file bound at InitPath (initbin_linux.go)
	netHost *os.File   // a direct box's egress listeners arrive here (net_linux.go)
}

// Stub is a placeholder made for a protected path that did not exist.
type Stub struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	// Lock is the lock file of the writable root the placeholder is in
	// (see stublock_linux.go); "" removes it without that lock.
	Lock string `json:"lock,omitempty"`
	// Dir marks a placeholder directory (made for a missing ancestor of a
	// protected path); it is removed only while empty.
	Dir bool `json:"dir,omitempty"`
	// Content is what a placeholder file holds ("" for most; "." for a
	// commondir, which git must be able to read).
	Content string `json:"content,omitempty"`
}

// AddFile passes f to bubblewrap (and so to the init) and returns its
// descriptor number there. The box closes it in Started.
func (b *Box) AddFile(f *os.File) int {
	b.ExtraFiles = append(b.ExtraFiles, f)
	b.child = append(b.child, f)
	return 2 + len(b.ExtraFiles)
}

// SetStderr names the descriptor (from AddFile) the target's stderr is.
func (b *Box) SetStderr(fd int) { b.config.StderrFD = fd }

// Started closes the descriptors only bubblewrap needed.
func (b *Box) Started() {
	for _, f := range b.child {
		f.Close()
	}
	b.child = nil
}

// SendConfig hands the in-box init its configuration with the target argv,
// then closes the pipe.
func (b *Box) SendConfig(argv []string) error {
	if b.direct {
		return nil
	}
	if b.configW == nil {
		return errors.New("config already sent")
	}
	c := b.config
	c.Argv = argv
	c.Proto = boxconf.Fingerprint()
	if b.gv != nil {
		c.Argv = b.gv.argv(argv) // tier 2: HOME made first (gvisor_linux.go)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = b.configW.Write(data)
	cerr := b.configW.Close()
	b.configW = nil
	if err != nil {
		return fmt.Errorf("send box config: %w", err)
	}
	return cerr
}

// ChildPid returns the host pid of the box's PID 1 (the init), as
// bubblewrap reports it. It can be read once, after the box started.
func (b *Box) ChildPid() (int, error) {
	if b.infoR == nil {
		return 0, errors.New("no info pipe")
	}
	var info struct {
		Pid int `json:"child-pid"`
	}
	err := json.NewDecoder(io.LimitReader(b.infoR, 1<<16)).Decode(&info)
	b.infoR.Close()
	b.infoR = nil
	if err != nil || info.Pid <= 0 {
		return 0, fmt.Errorf("bubblewrap's info: %v", err)
	}
	return info.Pid, nil
}

// ReadStatus reads what the in-box init reported. It returns an error when
// the init reported nothing (it never started, or was killed).
func (b *Box) ReadStatus() (boxconf.Status, error) {
	var st boxconf.Status
	if b.statusR == nil {
		return st, errors.New("no status pipe")
	}
	data, err := io.ReadAll(io.LimitReader(b.statusR, 1<<20))
	b.statusR.Close()
	b.statusR = nil
	if err != nil {
		return st, err
	}
	if len(data) == 0 {
		return st, errors.New("the box's init reported nothing")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var next boxconf.Status
		if err := dec.Decode(&next); err == io.EOF {
			return st, nil
		} else if err != nil {
			return st, fmt.Errorf("box status: %w", err)
		}
		st = next
	}
}

// Close releases every descriptor and removes the stubs.
func (b *Box) Close() error {
	b.gv.close() // tier 2: its processes and directory first (gvisor_linux.go)
	for _, fs := range [][]*os.File{b.child, b.keep, {b.configW, b.statusR, b.infoR, b.control, b.netHost}} {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	b.child, b.keep, b.configW, b.statusR, b.infoR, b.control, b.netHost = nil, nil, nil, nil, nil, nil, nil
	// Release this run's share of the placeholders, then remove those no
	// other run holds.
	for _, f := range b.locks {
		f.Close()
	}
	b.locks = nil
	err := RemoveStubs(b.Stubs)
	b.Stubs = nil
	b.Quarantined = append(b.Quarantined, b.watch.quarantine()...)
	b.watch = nil
	return err
}

// stubMode marks airlock's placeholders: an empty regular file that only
// its owner may read. A run that finds one (another run in the same tree is
// still going) shares it rather than making its own.
const stubMode = 0o400

// RemoveStubs removes placeholders that are still what airlock made (the
// same inode, empty) and that no other live run shares: each run holds a
// shared flock on its placeholders, so one that cannot take the exclusive
// lock leaves the file to the run still using it. It works under each
// root's lock (Stub.Lock), so no run adopts a placeholder while it goes.
// Anything that changed is left alone and reported. The caller has
// released its own shared locks first.
func RemoveStubs(stubs []Stub) error {
	var order []string
	byLock := map[string][]Stub{}
	for _, s := range stubs {
		if _, ok := byLock[s.Lock]; !ok {
			order = append(order, s.Lock)
		}
		byLock[s.Lock] = append(byLock[s.Lock], s)
	}
	var errList []error
	for _, lk := range order {
		errList = append(errList, removeStubsLocked(lk, byLock[lk]))
	}
	return errors.Join(errList...)
}

// removeStubsLocked removes the placeholders of one root under its lock.
func removeStubsLocked(lock string, stubs []Stub) error {
	var errList []error
	var l *stubLock
	if lock != "" {
		var err error
		if l, err = lockStubs(lock); err != nil {
			// Removing without the lock risks only that a box being
			// planned now fails closed; keeping them would leave them in
			// the tree.
			errList = append(errList, fmt.Errorf("stubs: %w; removed without it", err))
		}
	}
	all := true
	for i := len(stubs) - 1; i >= 0; i-- {
		gone, err := removeStub(stubs[i])
		if err != nil {
			errList = append(errList, err)
		}
		all = all && gone
	}
	if l != nil {
		// The last run of the root takes the lock file along.
		l.unlock(all)
	}
	return errors.Join(errList...)
}

// removeStub removes one placeholder; gone reports that it is no longer
// there (removed now or before), false when another run still shares it or
// it changed.
func removeStub(s Stub) (gone bool, err error) {
	fd, err := unix.Open(s.Path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("stub %s: %w", s.Path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("stub %s: %w", s.Path, err)
	}
	want := uint32(unix.S_IFREG)
	if s.Dir {
		want = unix.S_IFDIR
	}
	switch {
	case uint64(st.Dev) != s.Dev || st.Ino != s.Ino:
		return false, fmt.Errorf("stub %s was replaced; left in place", s.Path)
	case st.Mode&unix.S_IFMT != want:
		return false, fmt.Errorf("stub %s changed type; left in place", s.Path)
	case !s.Dir && st.Size != int64(len(s.Content)):
		return false, fmt.Errorf("stub %s is no longer empty; left in place", s.Path)
	}
	if !s.Dir && s.Content != "" {
		buf := make([]byte, len(s.Content))
		if n, _ := unix.Pread(fd, buf, 0); string(buf[:max(n, 0)]) != s.Content {
			return false, fmt.Errorf("stub %s changed; left in place", s.Path)
		}
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		// Another run still protects with it; it removes it when done.
		return false, nil
	}
	var now unix.Stat_t
	if unix.Lstat(s.Path, &now) == nil && uint64(now.Dev) == s.Dev && now.Ino == s.Ino {
		if s.Dir {
			// The box may have made things in it: then it is theirs now,
			// with an ordinary directory's mode.
			err := unix.Rmdir(s.Path)
			if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
				unix.Fchmod(fd, 0o755)
				return true, nil
			}
			if err != nil && !errors.Is(err, unix.ENOENT) {
				return false, fmt.Errorf("remove stub %s: %w", s.Path, err)
			}
			return true, nil
		}
		if err := unix.Unlink(s.Path); err != nil && !errors.Is(err, unix.ENOENT) {
			return false, fmt.Errorf("remove stub %s: %w", s.Path, err)
		}
	}
	return true, nil
}

// op is one bubblewrap setup operation, ordered by destination depth so a
// parent is mounted before what is mounted inside it.
type op struct {
	dest  string
	order int // at equal depth: 0 tmpfs/dir/symlink, 1 data, 2 bind, 3 protection
	args  []string
	pn    *pinned // what a bind of a descriptor binds (tier 2 reads it)
}

// sortOps orders operations as they must be applied: a parent before what
// is mounted inside it, and at equal depth by order.
func sortOps(ops []op) {
	sort.SliceStable(ops, func(i, j int) bool {
		di, dj := depth(ops[i].dest), depth(ops[j].dest)
		if di != dj {
			return di < dj
		}
		return ops[i].order < ops[j].order
	})
}

// bwrapOrder reorders sorted ops for bubblewrap's cost, keeping every
// constraint sortOps puts: an op still follows each earlier op at or above
// its destination (a parent's mount before what is mounted inside it, and
// ops on one path in their order). Between unrelated ops the order is
// free, and it is worth choosing: every bind and every --remount-ro makes
// bubblewrap read and parse the whole mount table (its bind_mount reads
// /proc/self/mountinfo to find the flags to set), so each costs in
// proportion to the mounts already made, the host's included. The ops
// dense in such readings go first, while the table is short: /proc and
// its cover (one reading for each of its mounts), then /dev (six binds
// for its eight mounts), then the other binds, and last what mounts
// without reading the table (a tmpfs, a directory, a queue), unless
// something is mounted inside it. The box that results is the same
// (TestOpOrderView).
func bwrapOrder(ops []op) []op {
	// after[i] are the ops that must follow ops[i]; waits[j] counts the
	// ops ops[j] still waits for.
	after := make([][]int, len(ops))
	waits := make([]int, len(ops))
	for j := range ops {
		for i := 0; i < j; i++ {
			if within(ops[j].dest, ops[i].dest) {
				after[i] = append(after[i], j)
				waits[j]++
			}
		}
	}
	placed := make([]bool, len(ops))
	out := make([]op, 0, len(ops))
	for len(out) < len(ops) {
		best := -1
		for j := range ops {
			if !placed[j] && waits[j] == 0 && (best < 0 || mountCost(ops[j]) < mountCost(ops[best])) {
				best = j
			}
		}
		placed[best] = true
		out = append(out, ops[best])
		for _, j := range after[best] {
			waits[j]--
		}
	}
	return out
}

// mountCost ranks an op for bwrapOrder: lower goes first.
func mountCost(o op) int {
	switch {
	case o.dest == "/proc":
		return 0
	case o.args[0] == "--dev":
		return 1
	case o.args[0] == "--tmpfs" || o.args[0] == "--dir" || o.args[0] == "--mqueue":
		return 3
	}
	return 2
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// planner accumulates a Box.
type planner struct {
	direct   bool // no init inside: see plan
	spec     Spec
	box      *Box
	bw       bwrapInfo
	ops      []op
	writable []string // directories the box may write, in every spelling
	bound    []string // destinations bound from the host
	pins     []boxconf.Pin
	boxOnly  map[string]bool
	sealed   bool     // the in-box code seals the writable mounts: execlist_linux.go
	code     []byte   // the seccomp filter, once compiled (filterCode)
	sealArgs []string // the init's flags for it, before its others
	// lock is the root lock held while protect makes or adopts that
	// root's placeholders.
	lock *stubLock
	// runAs is the user the box runs as when not airlock's own (see
	// chooseUser); nil is airlock's.
	runAs *RunAs
	// listen, for a direct box with network, is how its exec step hands
	// the forwarder's listeners out (net_linux.go).
	listen *boxconf.Listen
	// warm is a warm box's plan (warm_linux.go): its POSIX message queues
	// mounted at /dev/mqueue for the init to empty after every call, and
	// its root read-only, as nothing of it is brought back between calls.
	warm bool
	// smallInit: the box's in-box code is airlock-box, not the airlock
	// binary (initbin_linux.go).
	smallInit bool
}

func (p *planner) file(f *os.File, child bool) int {
	p.box.ExtraFiles = append(p.box.ExtraFiles, f)
	if child {
		p.box.child = append(p.box.child, f)
	}
	return 2 + len(p.box.ExtraFiles)
}

// bindFD binds a pinned descriptor at dest.
func (p *planner) bindFD(pn *pinned, dest string, rw bool, order int) {
	n := p.file(pn.f, false)
	p.box.keep = append(p.box.keep, pn.f)
	flag := "--ro-bind-fd"
	if rw {
		flag = "--bind-fd"
	}
	src := strconv.Itoa(n)
	if !p.bw.BindFD {
		// Without --bind-fd, bubblewrap resolves the magic link itself;
		// the init's identity check below still catches a swap.
		flag = "--ro-bind"
		if rw {
			flag = "--bind"
		}
		src = "/proc/self/fd/" + src
	}
	p.ops = append(p.ops, op{dest: dest, order: order, args: []string{flag, src, dest}, pn: pn})
	p.bound = append(p.bound, dest)
	p.pins = append(p.pins, boxconf.Pin{Path: dest, Dev: pn.dev, Ino: pn.ino})
	if dest != pn.real {
		if p.boxOnly == nil {
			p.boxOnly = map[string]bool{}
		}
		p.boxOnly[dest] = true
	}
}

func (p *planner) data(content []byte, dest string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	// Small files only: the pipe's buffer holds them, so the write never
	// waits for bubblewrap.
	if len(content) > 32<<10 {
		r.Close()
		w.Close()
		return fmt.Errorf("generated %s too large", dest)
	}
	_, err = w.Write(content)
	w.Close()
	if err != nil {
		r.Close()
		return err
	}
	n := p.file(r, true)
	p.ops = append(p.ops, op{dest: dest, order: 1, args: []string{"--perms", "0444", "--ro-bind-data", strconv.Itoa(n), dest}})
	return nil
}

// mechanisms are the tiers this build runs on Linux, one entry each.
var mechanisms = map[Tier]Mechanism{
	Tier0: none{},
	Tier1: bubblewrap{},
	Tier2: gvisor{},
}

// noMechanism is why a tier without an entry in mechanisms is refused.
func noMechanism(t Tier) error {
	if t == Tier2 {
		return tier2Unavailable(nil)
	}
	return errs.Unavailablef("sandbox tier %s: this build of airlock does not run it", t)
}

// Plan turns spec into a box of the given tier, or fails with the reason.
// The tier is concrete: TierAuto is refused (errs.Invalid), since only the
// kernel resolves it (Resolve). It never falls back to a weaker tier: a tier
// the host cannot give is errs.Unavailable. exe is the airlock binary
// re-executed as the in-box init.
func Plan(spec Spec, tier Tier, exe string) (*Box, error) {
	defer starttrace.Begin("plan")()
	if tier == TierAuto {
		return nil, ErrAuto("sandbox")
	}
	if err := validate(spec); err != nil {
		return nil, err
	}
	m, err := mechanismFor(tier)
	if err != nil {
		return nil, err
	}
	b, err := m.plan(spec, exe)
	if err == nil {
		noteWritable(spec)
	}
	return b, err
}

// noteWritable adds what spec's box may write to the process's list
// (everWritable) once its plan is made, before the box runs (a plan
// refused writes nothing, and one that names "/" is refused): a path the policy names that did
// not exist when its kernel's list was made (the kernel's Caches), or a
// kept home, is then passed over for the host's programs and caches by
// every later plan, this kernel's and the others'.
func noteWritable(spec Spec) {
	if spec.Writable {
		everWritable.add(spec.Write)
	}
	if spec.HomeDir != "" {
		everWritable.add([]string{spec.HomeDir})
	}
}

// bubblewrap is tier 1: bubblewrap's namespaces, airlock's seccomp filter,
// no capabilities, pinned binds and protected paths.
type bubblewrap struct{}

var _ Mechanism = bubblewrap{}

func (bubblewrap) Tier() Tier   { return Tier1 }
func (bubblewrap) Name() string { return "bubblewrap" }

func (m bubblewrap) plan(spec Spec, exe string) (*Box, error) { return m.planShape(spec, exe, false) }

// planShape plans the box; serve asks for airlock's init as PID 1 whatever
// the spec (a warm box, warm_linux.go).
func (m bubblewrap) planShape(spec Spec, exe string, serve bool) (*Box, error) {
	bw := findBwrap(os.Getenv("PATH"), spec.Caches)
	if bw.Path == "" || bw.Err != "" {
		return nil, errs.Unavailablef("sandbox tier 1: %s (install bubblewrap 0.12.0 or later, or run with --sandbox off to accept no confinement)", bw.Err)
	}
	if why := usernsBlocked(bw); why != "" {
		return nil, errs.Unavailablef("sandbox tier 1: %s", why)
	}
	if ok, why := seccomp.Supported(); !ok {
		return nil, errs.Unavailablef("sandbox tier 1: %s", why)
	}
	if spec.Ptrace {
		if ok, why := ptraceScoped(); !ok {
			return nil, errs.Unavailablef("sandbox.ptrace: %s", why)
		}
	}
	if exe == "" || !filepath.IsAbs(exe) {
		return nil, errs.Invalidf("sandbox: the airlock binary path %q is not absolute", exe)
	}
	p := &planner{spec: spec, bw: bw, box: &Box{Tier: Tier1, Path: bw.Path, Mechanism: m.Name(), Version: bw.Version},
		// The init is needed to check the binds from inside where
		// bubblewrap cannot bind a descriptor, and to run the egress
		// forwarder where the exec step cannot hand its listeners out
		// (net_linux.go).
		direct: (spec.Net == nil || netDirect()) && bw.BindFD && !serve, warm: serve}
	if err := p.plan(exe); err != nil {
		p.box.Close()
		return nil, err
	}
	return p.box, nil
}

func validate(spec Spec) error {
	if spec.Workdir == "" {
		return errs.Invalidf("sandbox: no working directory")
	}
	if !filepath.IsAbs(spec.Workdir) {
		return errs.Invalidf("sandbox: working directory %q is not absolute", spec.Workdir)
	}
	st, err := os.Stat(spec.Workdir)
	if err != nil {
		return errs.Wrap(errs.Invalid, err, "sandbox: working directory")
	}
	if !st.IsDir() {
		return errs.Invalidf("sandbox: working directory %s is not a directory", spec.Workdir)
	}
	for _, kv := range spec.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(kv, 0) {
			return errs.Invalidf("sandbox: environment entry %q is not KEY=VALUE", kv)
		}
	}
	if spec.Limits.MemoryBytes < 0 || spec.Limits.CPU < 0 || spec.Limits.Wall < 0 || spec.Limits.Pids < 0 {
		return errs.Invalidf("sandbox: negative limit")
	}
	for _, lst := range [][]string{spec.Read, spec.Write} {
		for _, r := range lst {
			if !filepath.IsAbs(r) {
				return errs.Invalidf("sandbox: path %q is not absolute", r)
			}
		}
	}
	return nil
}

// filterCode is the box's seccomp filter, compiled once: what bubblewrap
// loads, or what the in-box code is handed to load as it is
// (boxconf.Config.Filter), so the filter is this build's whatever build
// the in-box code is.
func (p *planner) filterCode() ([]byte, error) {
	if p.code != nil {
		return p.code, nil
	}
	defer starttrace.Begin("seccomp-compile")()
	code, err := compiledFilter(p.filterOptions())
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: seccomp filter")
	}
	p.code = code
	return p.code, nil
}

// filters are the seccomp filters this process compiled, by their
// options: a filter is a function of this build and its options alone
// (seccomp.Program reads nothing of the host), so a warm pool's calls
// and a kernel's boxes compile each once.
var filters struct {
	sync.Mutex
	code map[seccomp.Options][]byte
}

// compiledFilter is the encoded filter of opts for this architecture,
// each box its own copy.
func compiledFilter(opts seccomp.Options) ([]byte, error) {
	filters.Lock()
	defer filters.Unlock()
	code, ok := filters.code[opts]
	if !ok {
		prog, err := seccomp.Program(runtime.GOARCH, opts)
		if err != nil {
			return nil, err
		}
		code = seccomp.Encode(prog)
		if filters.code == nil {
			filters.code = map[seccomp.Options][]byte{}
		}
		filters.code[opts] = code
	}
	return slices.Clone(code), nil
}

// directEnv sets env for a box without an init whose command bubblewrap
// starts itself. Where airlock's exec step runs first, bubblewrap sets
// nothing: the step, which runs before the walls and the filter, is given
// the command's environment with the walls (boxconf.Walls.Env) and starts
// with none, so no LD_PRELOAD or GODEBUG of the box's reaches its loader
// or its Go runtime.
func directEnv(env []string) []string {
	var args []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	return args
}

func (p *planner) refuse(path, why string) error {
	return errs.Unavailablef("sandbox: %s: %s", path, why)
}

func (p *planner) plan(exe string) error {
	spec := p.spec
	b := p.box

	// Write roots and the working directory: every other pin is checked
	// against them (pin_linux.go, shared with tier 2).
	gr, err := p.pinRoots()
	if err != nil {
		return err
	}
	wd := gr.wd
	if err := p.chooseUser(wd, gr.wdRW); err != nil {
		gr.close()
		return err
	}

	// Namespaces and the process's standing.
	args := []string{"--unshare-user"}
	if p.bw.DisableUserns {
		args = append(args, "--disable-userns")
	} else {
		b.Notes = append(b.Notes, "bubblewrap has no --disable-userns; only the seccomp filter stops new user namespaces")
	}
	args = append(args, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--hostname", "airlock", "--die-with-parent", "--new-session", "--cap-drop", "ALL")
	if p.bw.ClearEnv {
		args = append(args, "--clearenv")
	}
	if p.direct {
		// No forwarder to run: bubblewrap starts the command itself with
		// airlock's filter (--seccomp below), which it loads into its own
		// PID 1 reaper as well, so the one other process in the box is as
		// filtered as the command and holds nothing the command lacks.
		// bubblewrap always sets no_new_privs. The environment goes in
		// the options descriptor (directEnv); bubblewrap itself starts
		// with none.
	} else {
		// airlock's init is PID 1: bubblewrap's reaper would stay
		// dumpable and unfiltered, its memory open to the target via
		// /proc/1/mem, next to the init holding the egress token.
		args = append(args, "--as-pid-1")
		// The init's own environment (the target's comes through the
		// config pipe): one P is all it needs, and fewer runtime threads
		// start faster on a busy host.
		args = append(args, "--setenv", "GOMAXPROCS", "1")
	}
	b.Namespaces = []string{"user", "mount", "pid", "ipc", "uts", "net", "cgroup"}

	// The system, read-only.
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
			p.ops = append(p.ops, op{dest: d, order: 0, args: []string{"--symlink", target, d}})
			continue
		}
		pn, err := pin(d, p.writable)
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox: system directory")
		}
		p.bindFD(pn, d, false, 2)
	}
	home := EnvValue(spec.Env, "HOME")
	p.ops = append(p.ops,
		op{dest: "/proc", args: []string{"--proc", "/proc"}},
		// The box's uid 0 is the host's root, and sysctl files answer to
		// the owner's bits for host root with no capability check: a
		// writable /proc/sys would let the box set kernel.core_pattern.
		// bubblewrap's own cover skips /proc/sys (its 0555 mode fails
		// access(W_OK) without capabilities), so airlock replaces it with a
		// read-only tmpfs holding read-only views of kernel, vm and fs, and
		// covers /proc/irq and /proc/bus the same way. Not net: in the box's
		// own network namespace it shows mostly that namespace's settings,
		// but the host-wide ones too (netfilter's conntrack limits, bridge),
		// and nothing in a box needs it; nor user, dev, debug, abi, crypto.
		// Each of these mounts is needed for this view: a bind covers one
		// path, and bubblewrap has no read-only tmpfs (BenchmarkBwrapOps
		// times them).
		op{dest: "/proc", order: 5, args: procCover()},
		op{dest: "/dev", args: []string{"--dev", "/dev"}},
		op{dest: "/tmp", args: []string{"--tmpfs", "/tmp"}},
		op{dest: "/var/tmp", args: []string{"--tmpfs", "/var/tmp"}},
		op{dest: "/run", args: []string{"--tmpfs", "/run"}},
	)
	if p.warm {
		p.ops = append(p.ops, op{dest: "/dev/mqueue", args: []string{"--mqueue", "/dev/mqueue"}})
	}

	// The in-box code (airlock-box, else the airlock binary), read-only,
	// never from a writable directory (CVE-2019-5736: a box that can
	// write the runtime's binary owns the next run).
	// It is pinned (and refused from a writable directory) whether or
	// not it is bound: a box that could write it would own the host's
	// next run all the same.
	ex, err := p.pinInit(exe)
	if err != nil {
		return err
	}
	if p.runsInBox() {
		p.bindFD(ex, boxInitPath, false, 2)
	} else {
		ex.f.Close()
		b.Notes = append(b.Notes, "in-box code: not bound at "+boxInitPath+": nothing in this box runs it (no init, exec step or proxy command)")
	}

	// What the policy grants, with the covers of what it would expose
	// (pin_linux.go, shared with tier 2).
	if err := p.pinGrants(gr, home); err != nil {
		return err
	}

	// The one way out.
	if spec.Net != nil && (p.direct || p.warm) {
		if err := p.planListen(); err != nil {
			return err
		}
	} else if spec.Net != nil {
		pn, err := p.pinProxy()
		if err != nil {
			return err
		}
		p.bindFD(pn, boxProxyPath, false, 2)
		if err := p.bindConnect(ex); err != nil {
			return err
		}
		p.box.config.Net = p.netConfig(boxProxyPath)
	}

	// /etc last: whether one view can stand for its files depends on
	// whether anything else is mounted beneath it (etcview_linux.go).
	if err := p.etc(home); err != nil {
		return err
	}

	sortOps(p.ops)
	p.ops = bwrapOrder(p.ops)
	if p.warm {
		b.ownTmp = ownMounts(p.ops)
	}
	for _, o := range p.ops {
		args = append(args, o.args...)
	}
	if p.warm {
		// Last: every mount point on the root is made by now. Without
		// it only Landlock's write wall, which an older kernel lacks,
		// keeps a call from leaving files on the root for the next.
		args = append(args, "--remount-ro", "/")
	}
	{
		// bubblewrap tells the host pid of the box's PID 1 here. The
		// runner waits for that process to be gone before it returns
		// (bubblewrap itself may exit while the namespace is still being
		// torn down), and the guard waits for it before removing
		// placeholders.
		infoR, infoW, err := os.Pipe()
		if err != nil {
			return err
		}
		b.infoR = infoR
		args = append(args, "--info-fd", strconv.Itoa(p.file(infoW, true)))
	}
	args = append(args, "--chdir", wd.real)

	execArgs, err := p.execWall(wd.real) // the exec allowlist: execlist_linux.go
	if err != nil {
		return err
	}
	switch {
	case p.direct && execArgs == nil:
		args = append(args, directEnv(spec.Env)...)
	case p.direct:
		// The exec step's own environment, airlock's and never the box's
		// (the command gets boxconf.Walls.Env): one P, as the init has.
		// The step runs on one thread, and a second P only has the Go
		// runtime start another thread for it to idle on (some 25 page
		// faults, at the start of every box with a wall or a network).
		args = append(args, "--setenv", "GOMAXPROCS", "1")
	}
	if p.sealed {
		// For the seal alone; the in-box code drops both. bubblewrap's
		// --disable-userns puts the command in a nested user namespace
		// that does not own the box's mounts, where the seal would be
		// refused: the seccomp filter alone stops new user namespaces
		// then (it refuses unshare, clone3 and clone with CLONE_NEWUSER).
		args = append(dropArg(args, "--disable-userns"), "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")
	}
	var cfgN, stN int
	code, err := p.filterCode()
	if err != nil {
		return err
	}
	if p.direct && !p.sealed {
		fr, fw, err := os.Pipe()
		if err != nil {
			return err
		}
		if len(code) > 60<<10 {
			fr.Close()
			fw.Close()
			return errs.New(errs.Internal, "sandbox: seccomp filter of %d bytes does not fit a pipe", len(code))
		}
		_, err = fw.Write(code)
		fw.Close()
		if err != nil {
			fr.Close()
			return err
		}
		args = append(args, "--seccomp", strconv.Itoa(p.file(fr, true)))
	} else {
		// Descriptors for the init: configuration in, status out.
		cfgR, cfgW, err := os.Pipe()
		if err != nil {
			return err
		}
		b.configW = cfgW
		cfgN = p.file(cfgR, true)
		stR, stW, err := os.Pipe()
		if err != nil {
			return err
		}
		b.statusR = stR
		stN = p.file(stW, true)
	}

	// bubblewrap's options go through a descriptor, so nothing about the
	// box shows in the process list beyond this line.
	argsR, argsW, err := os.Pipe()
	if err != nil {
		return err
	}
	argsN := p.file(argsR, true)
	b.options = args // what the box is, for a warm box's fingerprint
	var buf strings.Builder
	for _, a := range args {
		if strings.ContainsRune(a, 0) {
			return errs.Invalidf("sandbox: NUL in a path")
		}
		buf.WriteString(a)
		buf.WriteByte(0)
	}
	go func() {
		// The list can outgrow a pipe's buffer; bubblewrap reads it all
		// before doing anything else.
		io.WriteString(argsW, buf.String())
		argsW.Close()
	}()

	b.config.Env = append([]string(nil), spec.Env...)
	b.config.Dir = wd.real
	b.config.Ptrace = spec.Ptrace
	b.config.SetGID = p.filterOptions().SetGID
	b.config.Pins = p.pins
	b.config.Seccomp, b.config.Filter = true, code
	b.Seccomp = true
	b.Argv = []string{p.bw.Path, "--args", strconv.Itoa(argsN), "--"}
	if p.direct {
		b.Argv = append(b.Argv, execArgs...) // the exec step, when walled
		b.direct = true
		b.visible = p.visible()
		b.boxOnly = p.boxOnly
		b.env = spec.Env
		b.workdir = wd.real
		if p.listen != nil {
			b.Notes = append(b.Notes, "no airlock init inside: the exec step made the egress forwarder's loopback listeners and handed them to airlock on the host, which serves them")
		} else {
			b.Notes = append(b.Notes, "no airlock init inside: bubblewrap started the command under airlock's seccomp filter (no forwarder was needed)")
		}
		return nil
	}
	b.Argv = append(append(b.Argv, boxInitPath, InitArg), p.sealArgs...)
	b.Argv = append(b.Argv,
		boxconf.FlagConfig, strconv.Itoa(cfgN), boxconf.FlagStatus, strconv.Itoa(stN))
	return nil
}

// runsInBox reports whether anything in the box may run the in-box code
// at InitPath: an init (a box bubblewrap does not start directly, a warm
// one), an exec step (an exec wall's), or anything of a box with a network
// (its forwarder, git's proxy command). A box bubblewrap starts directly
// with no wall and no network runs none of it, so it is not bound there:
// one bind fewer, and nothing of airlock's for the box to run.
func (p *planner) runsInBox() bool {
	return p.spec.BindInBox || !p.direct || p.spec.Exec != nil || p.spec.Net != nil
}

// dropArg returns args without each argument equal to flag (a flag that
// takes no value).
func dropArg(args []string, flag string) []string {
	out := args[:0:0]
	for _, a := range args {
		if a != flag {
			out = append(out, a)
		}
	}
	return out
}

// visible lists the host paths the box sees at the same place: what a
// command found on the host must lie in to exist inside.
func (p *planner) visible() []string {
	var out []string
	for _, d := range p.bound {
		if !p.boxOnly[d] {
			out = append(out, d)
		}
	}
	for _, d := range systemDirs {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			continue // its target (/usr/...) is bound
		}
		out = append(out, d)
	}
	return out
}

// CommandLine returns bubblewrap's full command line for argv.
func (b *Box) CommandLine(argv []string) []string {
	if !b.direct {
		return b.Argv
	}
	return append(append([]string(nil), b.Argv...), argv...)
}

// Direct reports whether bubblewrap starts the command itself (no airlock
// init inside, no status pipe): the exit status is then bubblewrap's.
func (b *Box) Direct() bool { return b.direct }

// CheckCommand makes sure argv[0] exists inside the box before anything
// starts, so a missing command is airlock's refusal (exit 125), not a
// status of the command's. Only direct boxes need it; the init checks for
// itself.
func (b *Box) CheckCommand(name string) error {
	if !b.direct {
		return nil
	}
	cands, where := candidates(name, EnvValue(b.env, "PATH"), b.workdir)
	for _, c := range cands {
		if b.boxOnly[c] {
			return nil // bound from elsewhere: exists inside only
		}
		if executable(c) != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(c); err == nil && (withinAny(real, b.visible) != "" || withinAny(c, b.visible) != "") {
			return nil
		}
	}
	return &NotFoundError{Name: name, Where: where}
}

// procCover returns the bubblewrap options that make /proc/sys, /proc/irq
// and /proc/bus read-only, cover the files that show the host's kernel
// state (procMasks), and then make the box's whole /proc read-only.
//
// The read-only /proc is what stops writes into other processes through
// /proc/PID/mem (and /proc/PID/oom_score_adj, clear_refs, attr, ...): an
// open for writing answers EROFS whatever ptrace would allow. Reading
// stays, and so does everything a program changes through system calls
// rather than /proc files (prctl(PR_SET_NAME) for its name; writing
// /proc/self/comm or oom_score_adj answers EROFS). airlock's own process in
// the box, the init that is PID 1 where a box has one (see Box), is not
// dumpable: its /proc entries belong to the namespace's owner and answer
// EACCES to the box, which holds no CAP_SYS_PTRACE; a mount over /proc/1
// would add nothing (its threads are reachable as /proc/TID anyway). In a
// box without an init PID 1 is bubblewrap's reaper, under the same filter
// as the command.
func procCover() []string {
	args := []string{"--tmpfs", "/proc/sys"}
	for _, d := range []string{"kernel", "vm", "fs"} {
		args = append(args, "--ro-bind-try", "/proc/sys/"+d, "/proc/sys/"+d)
	}
	args = append(args, "--remount-ro", "/proc/sys")
	for _, d := range []string{"/proc/irq", "/proc/bus"} {
		if _, err := os.Stat(d); err == nil {
			args = append(args, "--tmpfs", d, "--remount-ro", d)
		}
	}
	args = append(args, procMasks()...)
	return append(args, "--remount-ro", "/proc")
}

// procMaskFiles show host-wide kernel state no program in a box needs:
// the kernel keyrings of every user (/proc/keys, key-users), kernel memory
// and allocator layout (kcore, slabinfo, vmallocinfo, pagetypeinfo), and
// timer and scheduler internals (timer_list, sched_debug), which leak
// kernel addresses and other processes' activity. They are covered with
// /dev/null, as runc covers its masked paths: they read as empty (and a
// write to one, meaningless for these, is discarded). /proc/sysrq-trigger,
// which only takes writes, is left to the read-only /proc (EROFS), so a
// write to it fails as it should.
var procMaskFiles = []string{
	"/proc/keys", "/proc/key-users", "/proc/kcore", "/proc/slabinfo", "/proc/vmallocinfo",
	"/proc/pagetypeinfo", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
	"/proc/latency_stats",
}

// procMaskDirs are covered with an empty read-only tmpfs: ACPI, sound and
// SCSI host interfaces.
var procMaskDirs = []string{"/proc/acpi", "/proc/asound", "/proc/scsi"}

// procMasks returns the options covering those this kernel has (the box's
// /proc is a new instance of the same kernel's, so the host's shows which
// exist; a cover over a missing file would fail the box).
func procMasks() []string {
	var args []string
	for _, f := range procMaskFiles {
		if fi, err := os.Lstat(f); err == nil && !fi.IsDir() {
			// --dev-bind: a plain bind would add nodev and reading would
			// answer EACCES instead of an empty file.
			args = append(args, "--dev-bind", "/dev/null", f)
		}
	}
	for _, d := range procMaskDirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			args = append(args, "--tmpfs", d, "--remount-ro", d)
		}
	}
	return args
}

func (p *planner) has(dest string) bool {
	for _, d := range p.bound {
		if d == dest {
			return true
		}
	}
	return false
}

func (p *planner) coveredByBind(path string) bool {
	for _, d := range p.bound {
		if within(path, d) {
			return true
		}
	}
	return false
}

func (p *planner) isSystem(path string) bool {
	for _, d := range append(append([]string{}, systemDirs...), "/etc", "/proc", "/dev", "/tmp", "/run") {
		if within(path, d) || within(d, path) {
			return true
		}
	}
	return false
}

// etc gives the box its /etc: the host files of etcFiles, read-only, and
// the generated ones. When nothing else is mounted beneath /etc they come
// as one view from the cache (etcview_linux.go), else, or when the view
// cannot be had, each is bound on its own.
func (p *planner) etc(home string) error {
	var srcs []etcSource
	// One walk to /etc for all of them (pinFrom); without it, each walks
	// from the root.
	etcDir, err := pin("/etc", p.writable)
	if err == nil {
		defer etcDir.f.Close()
	}
	for _, f := range etcPaths() {
		switch s, found := etcFileAt(etcDir, f); found {
		case etcPlain:
			srcs = append(srcs, s)
			continue
		case etcMissing:
			continue // as etcUnpinned leaves out what the host lacks
		}
		pn, err := pinFrom(etcDir, f, p.writable)
		if err != nil {
			p.etcUnpinned(f, err)
			continue
		}
		// pin's own stat of the file: the view's key and checks start
		// from it.
		srcs = append(srcs, etcSource{box: f, pn: pn, st: pn.st})
	}
	gens := p.etcGenerated(home)
	under := ""
	for _, o := range p.ops {
		if within(o.dest, "/etc") {
			under = o.dest
			break
		}
	}
	if under == "" {
		err := p.etcView(etcDir, srcs, gens)
		if err == nil {
			for _, s := range srcs {
				s.pn.f.Close()
			}
			return nil
		}
		var nv *errNoView
		if !errors.As(err, &nv) {
			return err
		}
		if p.spec.Caches.etcViewDir() != "" {
			p.box.Notes = append(p.box.Notes, "/etc bound file by file: "+err.Error())
		}
	}
	for _, s := range srcs {
		if s.pn.f == nil { // stat only (etcFileAt): bound, it is pinned
			pn, err := pinFrom(etcDir, s.pn.real, p.writable)
			if err != nil {
				p.etcUnpinned(s.box, err)
				continue
			}
			s.pn = pn
		}
		p.bindFD(s.pn, s.box, false, 2)
	}
	return p.writeEtc(gens)
}

// etcUnpinned leaves out the /etc file f that could not be pinned: silently
// when the host lacks it (asked only when pinning failed: most are there),
// with a note when it is there but cannot be pinned safely.
func (p *planner) etcUnpinned(f string, err error) {
	if _, lerr := os.Lstat(f); lerr == nil {
		p.box.Notes = append(p.box.Notes, err.Error())
	}
}

// etcFileAt stats f, a file directly in /etc, from the pinned /etc without
// opening it. A regular file there is reached through no link (/etc is
// its own resolved path, and the stat follows none), so that stat is the
// one pinning it would give, and pinFrom's checks (no link on the way, no
// resolution into a writable directory) have nothing to refuse: the view,
// whose key and record are made of stats, needs no descriptor of it
// unless it is copied (openEtcSources) or bound on its own. Anything else
// (a directory, a link, a file beneath a directory, an /etc that is a
// link) is pinned as before, and a name the host's /etc lacks is left out
// at once. A quarter of the plan's system calls were these pins.
func etcFileAt(etcDir *pinned, f string) (etcSource, etcFound) {
	if etcDir == nil || etcDir.real != "/etc" || filepath.Dir(f) != "/etc" {
		return etcSource{}, etcOther
	}
	var st unix.Stat_t
	switch err := unix.Fstatat(int(etcDir.f.Fd()), filepath.Base(f), &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == unix.ENOENT:
		return etcSource{}, etcMissing
	case err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG:
		return etcSource{}, etcOther
	}
	return etcSource{box: f, st: st, pn: &pinned{real: f, dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode, st: st}}, etcPlain
}

// etcFound is what etcFileAt found of a name.
type etcFound int

const (
	etcOther   etcFound = iota // anything it does not take: pinned as before
	etcPlain                   // a regular file, known by its stat
	etcMissing                 // nothing: the host lacks it
)

// openEtcSources pins the sources etcFileAt only stat, each wanted to be
// the very file of that stat (the view's key names it): one that changed
// meanwhile means no view.
func openEtcSources(etcDir *pinned, srcs []etcSource, writable []string) error {
	for i := range srcs {
		s := &srcs[i]
		if s.pn.f != nil {
			continue
		}
		pn, err := pinFrom(etcDir, s.pn.real, writable)
		if err != nil {
			return noView("%v", err)
		}
		var was, now [stampIDMax]byte
		if string(appendStampID(was[:0], &s.st)) != string(appendStampID(now[:0], &pn.st)) || s.st.Uid != pn.st.Uid || s.st.Gid != pn.st.Gid {
			pn.f.Close()
			return noView("%s changed while it was planned", s.box)
		}
		s.pn = pn
	}
	return nil
}

// etcData writes the generated parts of /etc one by one (tier 2 binds the
// host's files itself).
func (p *planner) etcData(home string) error { return p.writeEtc(p.etcGenerated(home)) }

func (p *planner) writeEtc(gens []etcGen) error {
	for _, g := range gens {
		if err := p.data([]byte(g.content), g.box); err != nil {
			return err
		}
	}
	return nil
}

// etcGenerated are the generated parts of /etc: users, groups, name
// service and name resolution that point nowhere but the box itself.
func (p *planner) etcGenerated(home string) []etcGen {
	uid, gid := p.boxIDs()
	if home == "" {
		home = "/"
	}
	name := "airlock"
	if uid == 0 {
		name = "root"
	}
	passwd := fmt.Sprintf("%s:x:%d:%d:%s:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", name, uid, gid, name, home)
	group := fmt.Sprintf("%s:x:%d:\nnogroup:x:65534:\n", name, gid)
	files := []struct{ path, content string }{
		{"/etc/passwd", passwd},
		{"/etc/group", group},
		{"/etc/hosts", "127.0.0.1\tlocalhost airlock\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
		// No resolver is reachable from the box: names resolve at the
		// egress proxy. Pointing at loopback makes a lookup fail at once.
		{"/etc/resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"},
		{"/etc/nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n"},
		{"/etc/hostname", "airlock\n"},
	}
	var out []etcGen
	for _, f := range files {
		out = append(out, etcGen{box: f.path, content: f.content})
	}
	return out
}

// pinParents binds every directory between the writable path that holds
// file and file onto itself, still writable, as protect does for the
// ancestors of a protected path: a mount point cannot be renamed, so the
// box cannot move the directory aside with the read-only policy file in it
// and put a directory of its own, with a policy of its own, in its place.
func (p *planner) pinParents(file string) error {
	root := ""
	for _, w := range p.writable {
		if within(file, w) && len(w) > len(root) {
			root = w
		}
	}
	if root == "" {
		return nil
	}
	var dirs []string
	for d := filepath.Dir(file); d != root && within(d, root); d = filepath.Dir(d) {
		dirs = append(dirs, d)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if p.has(d) {
			continue
		}
		pn, err := pin(d, p.writable)
		if err != nil {
			return errs.Wrap(errs.Unavailable, err, "sandbox: policy file's directory")
		}
		if !pn.isDir() {
			pn.f.Close()
			return p.refuse(d, "the policy file's directory is not a directory")
		}
		p.bindFD(pn, d, true, 3)
	}
	return nil
}
