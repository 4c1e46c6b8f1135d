package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// A tier-2 warm box is the gVisor sandbox of Plan with airlock's init
// serving calls as its first process. The control socket is one more
// descriptor passed in with runsc's --pass-fd, after the init's
// configuration and status pipes: gVisor imports it as a host-backed
// Unix socket, and the descriptors the runner attaches to a call
// (SCM_RIGHTS: its stdin, stdout and stderr pipes) arrive in the box as
// host pipes, so a call's output goes straight to the runner. (The other
// way, gVisor refuses SCM_RIGHTS on an imported socket with EINVAL; the
// init never sends any.)

// planWarmGVisor plans the tier-2 warm box for spec.
func planWarmGVisor(spec Spec, exe string) (*Box, error) {
	b, err := gvisor{warm: true}.plan(spec, exe)
	if err != nil {
		return nil, err
	}
	g := b.gv
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox tier 2: warm box control socket")
	}
	unix.SetNonblock(fds[0], true) // the runner's end polls, as at tier 1
	b.control = os.NewFile(uintptr(fds[0]), "warm-control")
	boxEnd := os.NewFile(uintptr(fds[1]), "warm-control-box")
	g.initFiles = append(g.initFiles, boxEnd)
	b.child = append(b.child, boxEnd) // closed once runsc has it (Started)
	g.serve = []string{boxconf.FlagServe, strconv.Itoa(gvisorInitFD + len(g.initFiles) - 1)}
	for _, d := range g.scratch() {
		g.serve = append(g.serve, boxconf.FlagScratch, d)
	}
	return b, nil
}

// scratch are the box's tmpfs mounts a call may write (/dev, /tmp,
// /var/tmp, /run, a private HOME), each outside the others; not one a
// later bind covers (a working directory of /tmp), which is the host's
// tree there, as at tier 1 (ownMounts).
func (g *gvisorBox) scratch() []string {
	var out []string
	for i, m := range g.spec.Mounts {
		if m.Type != "tmpfs" || g.boundOver(i) {
			continue
		}
		own := true
		for _, o := range out {
			own = own && o != m.Destination && !within(m.Destination, o)
		}
		if own {
			out = append(out, m.Destination)
		}
	}
	return out
}

// boundOver reports whether a mount after the i-th binds a host path at
// its destination or above it.
func (g *gvisorBox) boundOver(i int) bool {
	for _, later := range g.spec.Mounts[i+1:] {
		if later.Type == "bind" && within(g.spec.Mounts[i].Destination, later.Destination) {
			return true
		}
	}
	return false
}

// CallArgv is the command line a warm box's init runs for argv: at tier
// 2 a HOME inside the private /tmp is made first, as a cold box makes it
// (the scratch restore removes it after every call).
func (b *Box) CallArgv(argv []string) []string {
	if b.gv == nil {
		return argv
	}
	return b.gv.argv(argv)
}

// fingerprint names what a tier-2 box is beyond the common fields: its
// OCI spec with the box's own directory taken out of every path, each
// pinned source's inode, the digest of each generated file, the root's
// links, and runsc's
// flags that depend on the plan. "" for any other box.
func (g *gvisorBox) fingerprint() string {
	if g == nil {
		return ""
	}
	spec := g.spec
	spec.Process.Args = nil
	spec.Mounts = append([]ociMount(nil), g.spec.Mounts...)
	for i, m := range spec.Mounts {
		spec.Mounts[i].Source = strings.Replace(m.Source, g.dir, "$BOX", 1)
	}
	srcs := make([]boxconf.GVisorSource, len(g.srcs))
	for i, s := range g.srcs {
		s.GVisorSource.FD = 0
		s.GVisorSource.Target = strings.Replace(s.Target, g.dir, "$BOX", 1)
		srcs[i] = s.GVisorSource
	}
	spec.Root.Path = strings.Replace(spec.Root.Path, g.dir, "$BOX", 1)
	data, _ := json.Marshal(struct {
		Runsc, Home string
		Launch, Net bool
		Spec        ociSpec
		Sources     []boxconf.GVisorSource
		Generated   map[string]string
		Links       [][2]string
	}{g.runsc, g.mkhome, g.launch, g.net, spec, srcs, g.gen, g.links})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// digest keeps the digest of the generated file bound at dest.
func (g *gvisorBox) digest(dest string, data []byte) {
	if g.gen == nil {
		g.gen = map[string]string{}
	}
	sum := sha256.Sum256(data)
	g.gen[dest] = hex.EncodeToString(sum[:])
}

// dryGVisorBox is the gvisorBox of a plan made for its fingerprint only:
// its directory is named, never made, locked or recorded.
func dryGVisorBox(runsc string) *gvisorBox {
	dir := filepath.Join(gvisorBoxesDir(), "airlock-dry")
	return &gvisorBox{runsc: runsc, dir: dir, bundle: filepath.Join(dir, "bundle"), id: "airlock-dry", dry: true}
}

// PlanWarmKey plans spec for a warm box's fingerprint: at tier 1 the box
// itself (PlanWarm); at tier 2 the same plan without its box directory,
// bundle or control socket, which cost a hundred file system operations
// and are needed only when no running box has the fingerprint. A key plan
// that is not Startable is closed, and PlanWarm makes the box.
func PlanWarmKey(spec Spec, tier Tier, exe string) (*Box, error) {
	if tier != Tier2 {
		return PlanWarm(spec, tier, exe)
	}
	if spec.Net != nil {
		return nil, errs.Unavailablef("sandbox: a warm box has no network (a box with the egress proxy is made per call)")
	}
	if err := validate(spec); err != nil {
		return nil, err
	}
	return gvisor{warm: true}.planBox(spec, exe, true)
}

// Startable reports whether the plan can start a box (a key plan of tier
// 2 cannot).
func (b *Box) Startable() bool { return b.gv == nil || !b.gv.dry }
