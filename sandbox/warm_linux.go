package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// warmScratch are the box's own tmpfs directories a warm box's init brings
// back to their first state after every call (boxinit's scratch_linux.go);
// a private HOME is added when the plan made one. /dev/mqueue is the box's
// POSIX message queues, mounted for a warm box only: a queue outlives
// every process (in the box's IPC namespace, as long as the box), and its
// name and attributes would carry one call's data to the next; the kernel
// lists them nowhere else.
var warmScratch = []string{"/tmp", "/var/tmp", "/run", "/dev", "/dev/mqueue"}

// PlanWarm plans a warm box for spec: the box Plan would make, with
// airlock's init as its PID 1 serving calls over a control socket (Control)
// instead of running one command, so that one box serves many calls of the
// same confinement. Calls' environments travel with each call; everything
// else the box is (its mounts, pinned inodes, placeholders, walls, filter)
// is in its Fingerprint.
//
// A warm box is tier 1 or 2 (gvisor_warm_linux.go); one with network is
// tier 1 on a kernel with Landlock, and has the forwarder's listeners,
// which its init hands to the host (NetHost) as it begins: the egress
// proxy, its socket and token are each call's, never the box's, and are
// not in the plan. Anything else is errs.Unavailable, and the caller runs
// the call in a box of its own.
func PlanWarm(spec Spec, tier Tier, exe string) (*Box, error) {
	if tier != Tier1 && tier != Tier2 {
		return nil, errs.Unavailablef("sandbox: a warm box is tier 1 or 2 (tier %s runs a box per call)", tier)
	}
	if spec.Net != nil && (tier != Tier1 || !netDirect()) {
		return nil, errs.Unavailablef("sandbox: a warm box with network is tier 1 on a kernel with Landlock (this one is made per call)")
	}
	if err := validate(spec); err != nil {
		return nil, err
	}
	if tier == Tier2 {
		b, err := planWarmGVisor(spec, exe)
		if err == nil {
			noteWritable(spec)
		}
		return b, err
	}
	b, err := bubblewrap{}.planShape(spec, exe, true)
	if err != nil {
		return nil, err
	}
	noteWritable(spec)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: warm box control socket")
	}
	// The runner's end polls (deadlines, a reader the pool can stop);
	// the init's stays blocking, as its one thread of calls wants.
	unix.SetNonblock(fds[0], true)
	b.control = os.NewFile(uintptr(fds[0]), "warm-control")
	n := b.AddFile(os.NewFile(uintptr(fds[1]), "warm-control-box"))
	b.Argv = append(b.Argv, boxconf.FlagServe, strconv.Itoa(n))
	for _, d := range b.scratch() {
		b.Argv = append(b.Argv, boxconf.FlagScratch, d)
	}
	return b, nil
}

// scratch are the box's own file systems a call may write: those of the
// fixed ones (warmScratch) and HOME, when the plan made it a tmpfs of its
// own, that no host directory is bound over (ownMounts). A working
// directory or grant bound at /tmp is the host's tree there, as it is in
// a box of its own: the init never enters it, and the tmpfs beneath it
// is out of every call's reach.
func (b *Box) scratch() []string {
	var out []string
	for _, d := range append(append([]string(nil), warmScratch...), b.home()) {
		if d != "" && slices.Contains(b.ownTmp, d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// ownMounts lists the destinations of ops that make a file system of the
// box's own (a tmpfs, /dev, the message queues) over which no later op
// binds anything at that place or above it. Binds come after a tmpfs at
// the same depth (sortOps), so a working directory of /tmp hides the
// box's /tmp.
func ownMounts(ops []op) []string {
	var out []string
	for i, o := range ops {
		if o.args[0] != "--tmpfs" && o.args[0] != "--dev" && o.args[0] != "--mqueue" {
			continue
		}
		covered := false
		for _, later := range ops[i+1:] {
			covered = covered || within(o.dest, later.dest) && slices.ContainsFunc(later.args, isBindFlag)
		}
		if !covered {
			out = append(out, o.dest)
		}
	}
	return out
}

// isBindFlag reports whether a is one of bubblewrap's options that bind a
// host file or directory.
func isBindFlag(a string) bool {
	switch a {
	case "--bind", "--bind-try", "--ro-bind", "--ro-bind-try", "--dev-bind", "--dev-bind-try", "--bind-fd", "--ro-bind-fd":
		return true
	}
	return false
}

// home is the box's HOME, "" when the environment names none.
func (b *Box) home() string { return EnvValue(b.config.Env, "HOME") }

// Control is a warm box's end of the control socket (nil for any other
// box); the box closes it in Close.
func (b *Box) Control() *os.File { return b.control }

// Fingerprint names what the box is: bubblewrap's options (every mount,
// in order), each bind's pinned device and inode, the placeholders, the
// walls, the filter, the working directory and the user it runs as. Two
// plans with one fingerprint make the same box, so a call planned afresh
// may run in a warm box of the same fingerprint and find exactly what a
// box of its own would have given it; anything that changed on the host
// between the plans (a new socket to cover, a new repository's files to
// hold, a link swapped) changes the fingerprint.
func (b *Box) Fingerprint() string {
	c := b.config
	c.Env, c.Argv, c.StderrFD = nil, nil, 0
	data, _ := json.Marshal(struct {
		Tier      Tier
		Version   string
		Options   []string
		Init      []string
		Config    boxconf.Config
		Stubs     []Stub
		RunAs     *RunAs
		Protected bool
		GVisor    string
	}{b.Tier, b.Version, b.options, b.Argv, c, b.Stubs, b.RunAs, b.Protected, b.gv.fingerprint()})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// InitBin is the host file the box runs as its init (airlock-box, else the
// airlock binary): the runner runs it on the host too, in the box's PID
// namespace, as a warm box's reset server (boxconf.FlagResetPids).
func (b *Box) InitBin() string { return b.initBin }

// Dir is the working directory inside the box, as the plan resolved it.
func (b *Box) Dir() string { return b.config.Dir }
