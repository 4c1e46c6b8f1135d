package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/sandbox/lookpath"
)

// NodeUsage and NodeHelp are `airlock node`'s synopsis and help, for the
// airlock-node binary that runs it (internal/fleetcli).
const NodeUsage = "[--server URL] [--enroll-token-file FILE] [--pool NAME] [--id ID] [--sandbox auto|off|1] [--max-boxes N] [--state DIR]"

const NodeHelp = `Runs a node of the fleet: it probes this host's sandbox tier, registers
with the server (its tier and the probe's findings), and takes jobs of its
pool: from the pool's queue always, from the pool's floor queue (work that
can run a shell) only at sandbox tier 1, and the runs it claimed from its
own queue, heartbeating while they run.

Each job runs through a kernel built for it from the job's own policy
(never this node's): decided, confined at this node's tier and recorded in
the job's own audit log under STATE/jobs/ID. A job's box gets none of this
node's environment.

On first start the node makes its key (STATE/pki/node.key, 0600; it never
leaves the node) and enrols it with the server's enrolment token
(--enroll-token-file, else $AIRLOCK_ENROLL_TOKEN_FILE, else the local
server's STATE/enroll-token) for a certificate naming its id and pool,
renewed before it ends; it connects to Temporal with that certificate. At
tier 1 it runs the selftest's attest rows (airlock sandbox selftest
--attest) once and sends them signed with its key: the server records the
tier the rows prove, and only at an attested tier 1 may the node poll the
floor queue.

The node holds no operator's token. Its enrolment brings a token of its
own (STATE/pki/node.token, 0600; a new one at every enrolment), which only
registers this node and raises its own runs' questions: it cannot list or
answer approvals, start or kill jobs. --token-file is accepted, unused, for
one release.

--sandbox off runs tier 0 (no sandbox): such a node takes only jobs started
with --tier0, and says so when it registers.

--max-boxes N bounds the boxes this node runs at once (default 4): a node at
its bound declines further claims before any box starts, so the job waits in
its queue for a node with room.

A node is the airlock-node binary, which links the Temporal SDK that the
airlock binary leaves out: here, airlock node runs the airlock-node beside
this binary (never one on PATH, which may name a directory a box wrote)
with the same arguments. node list and
node sandbox-optout are this binary's own.`

// nodeBinary is the binary that runs `airlock node`: it links the Temporal
// SDK, which the airlock binary does not.
var nodeBinary = helperBinary{name: "airlock-node", runs: "nodes run", links: "the Temporal SDK"}

// nodeCmd runs Env.Node, which only the airlock-node binary sets; the
// airlock binary hands its arguments to that binary (node list and
// sandbox-optout are HTTP clients and stay here).
func nodeCmd() *Command {
	return &Command{Name: "node", Usage: NodeUsage, Short: "run a node that takes jobs from the server", Long: NodeHelp,
		Sub: nodeAdminCmds(),
		Run: func(ctx context.Context, env *Env, args []string) error {
			if env.Node != nil {
				return env.Node(ctx, env, args)
			}
			return handOver(env, nodeBinary, append([]string{"node"}, args...))
		}}
}

// helperBinary is a binary of airlock's own that runs commands the airlock
// binary leaves out, so that it need not link (and start) what they link.
type helperBinary struct {
	// name is the binary's (and its cmd/ package's) name.
	name string
	// runs and links say, in the error naming the fix, what the binary
	// runs ("nodes run") and what it links that airlock does not.
	runs, links string
	// static builds it without cgo (CGO_ENABLED=0), as scripts/setup.sh
	// does: it then reads users and hosts as the airlock binary does.
	static bool
}

// build is the command that builds b at path.
func (b helperBinary) build(path string) string {
	line := "go build -o " + path + " ./cmd/" + b.name
	if b.static {
		line = "CGO_ENABLED=0 " + line
	}
	return line
}

// handOver runs the helper binary b in place of this process, with args
// and the caller's environment and standard streams: the one beside the
// airlock binary. It returns only when it cannot, naming the fix.
func handOver(env *Env, b helperBinary, args []string) error {
	path, err := besideBinary(env, b)
	if err != nil {
		return err
	}
	if env.Exec == nil {
		return errs.Unavailablef("%s: this airlock cannot hand over to another program", path)
	}
	err = env.Exec(path, append([]string{path}, args...), env.Environ)
	return errs.Wrap(errs.Unavailable, err, "run %s", path)
}

// besideBinary finds b beside the airlock binary, and only there. PATH
// is never searched: its entries may be relative (the working directory,
// often a workspace a box wrote) or name any directory some box was
// granted, which no reading of PATH can tell, and a binary a box wrote must
// never be what the host executes. The one beside is trusted as the
// airlock binary is, and only while no one but its owner (root or this
// user) may change it.
func besideBinary(env *Env, b helperBinary) (string, error) {
	if env.Exe == "" {
		return "", errs.Unavailablef("%s in the %s binary beside the airlock binary, whose path is unknown: run %s directly", b.runs, b.name, b.name)
	}
	beside := filepath.Join(filepath.Dir(env.Exe), b.name)
	err := lookpath.Executable(beside)
	if err == nil {
		err = ownedHere(beside)
	}
	if err != nil {
		return "", errs.Unavailablef("%s in the %s binary, which links %s that the airlock binary leaves out, and there is none at %s (%v; PATH is not searched): build it beside airlock (`%s`; scripts/setup.sh does)", b.runs, b.name, b.links, beside, err, b.build(beside))
	}
	if fi, err := os.Lstat(beside); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		// The program handed to is "the airlock binary" of the boxes it
		// starts: their planner keeps them off its directory, and only
		// when that is this binary's directory does it keep them off this
		// binary (and the other programs beside it) too.
		return "", errs.Unavailablef("%s in the %s binary, and %s is a link: put the file itself beside the airlock binary (`%s`), so that no box it starts may write the directory of either", b.runs, b.name, beside, b.build(beside))
	}
	if sameFile(env.Exe, beside) {
		// A link to, or a copy named as, the binary that hands over would
		// hand over to itself again and again. (Where the running binary
		// is gone, nothing beside it can be it.)
		return "", errs.Unavailablef("%s in the %s binary, and %s is the running binary itself, not %s: build it beside airlock (`%s`)", b.runs, b.name, beside, b.name, b.build(beside))
	}
	if w, err := boxWrote(env, beside); err != nil || w != "" {
		if err != nil {
			return "", errs.Wrap(errs.Unavailable, err, "%s: %s", b.name, beside)
		}
		return "", errs.Unavailablef("%s in the %s binary, and %s lies in %s, which a box was let write (a box may have put it there; nothing there is run on the host): install airlock and %s where no box may write", b.runs, b.name, beside, w, b.name)
	}
	return beside, nil
}

// sameFile reports whether a and b are one file (b a link to a, or a
// itself under another name); false where either cannot be read.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// boxWrote names the path airlock recorded as granted to a box in fix mode
// (wiring.LoadBoxWritableRecord) that p, as spelled or with its links
// resolved, lies in; "" when none. The host never runs a program of
// airlock's own from there: a box may have written it, and the box-writable
// check of the box that may write it now (the planner's, for the airlock
// binary) does not see a box of an earlier run.
func boxWrote(env *Env, p string) (string, error) {
	written, err := wiring.LoadBoxWritableRecord(env.Getenv)
	if err != nil {
		return "", err
	}
	spelled := []string{filepath.Clean(p)}
	if real, err := filepath.EvalSymlinks(p); err == nil && real != spelled[0] {
		spelled = append(spelled, real)
	}
	for _, s := range spelled {
		for _, w := range written {
			if s == w || w == "/" || strings.HasPrefix(s, strings.TrimSuffix(w, "/")+"/") {
				return w, nil
			}
		}
	}
	return "", nil
}

// ownedHere refuses a file that someone other than root or this user owns,
// that group or others may write, or that has a second name (a hard link
// elsewhere may lie where a box writes, and a box writing it rewrites this
// one), and refuses it when any directory above it is so owned or
// writable (another user could put their own program in its place); above
// the file's own directory a sticky one (like /tmp) is let pass, as no one
// may move another's entry out of it. These are the rules airlock-box is
// held to.
func ownedHere(p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		return err
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%s has %d names (hard links); one elsewhere may lie where a box writes: make it a copy of its own", real, st.Nlink)
	}
	if err := ownedOnly(real, st.Uid, uint32(st.Mode)); err != nil {
		return err
	}
	for d, first := filepath.Dir(real), true; ; d, first = filepath.Dir(d), false {
		if err := syscall.Stat(d, &st); err != nil {
			return err
		}
		mode := uint32(st.Mode)
		if !first && mode&syscall.S_ISVTX != 0 {
			mode &^= 0o022
		}
		if err := ownedOnly(d, st.Uid, mode); err != nil {
			return err
		}
		if d == "/" {
			return nil
		}
	}
}

// ownedOnly refuses what someone other than root or this user owns, or
// group or others may write.
func ownedOnly(p string, uid, mode uint32) error {
	if uid != 0 && int(uid) != os.Geteuid() {
		return fmt.Errorf("%s is uid %d's", p, uid)
	}
	if mode&0o022 != 0 {
		return fmt.Errorf("%s may be written by others", p)
	}
	return nil
}

// clientFlags are how a command finds the server: --server and
// --token-file, else $AIRLOCK_SERVER and $AIRLOCK_TOKEN_FILE, else the
// local server's defaults.
type clientFlags struct {
	server, tokenFile *string
	// caFile is the fleet CA an https:// server is checked against.
	caFile *string
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	return &clientFlags{
		server:    fs.String("server", "", "the server's `URL` (default: $AIRLOCK_SERVER, else http://"+DefaultServerAddr+")"),
		tokenFile: fs.String("token-file", "", "the server's bearer token `file` (default: $AIRLOCK_TOKEN_FILE, else the local server's)"),
		caFile:    fs.String("ca-file", "", "the fleet CA `file` an https:// server is checked against (default: $AIRLOCK_CA_FILE, else the local server's STATE/pki/ca.pem)"),
	}
}

// serverURL is --server, else $AIRLOCK_SERVER, else the local server.
func (c *clientFlags) serverURL(env *Env) string { return ServerURL(env, *c.server) }

func (c *clientFlags) resolve(env *Env) (server, token string, err error) {
	server = c.serverURL(env)
	token, err = readTokenFile(env, *c.tokenFile, "AIRLOCK_TOKEN_FILE", "token", "the server's token (set --token-file)")
	return server, token, err
}

// readTokenFile reads a token: the flag's file, else $envVar's, else the
// local server's STATE/name.
func readTokenFile(env *Env, flagValue, envVar, name, what string) (string, error) {
	file := firstNonEmpty(flagValue, env.Getenv(envVar))
	if file == "" {
		dir, err := FleetDir(env, "", "server")
		if err != nil {
			return "", err
		}
		file = filepath.Join(dir, name)
	}
	b, err := os.ReadFile(absFrom(env, file))
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "%s", what)
	}
	return tokenOf(string(b)), nil
}

// tokenOf is the token a token file holds: the file's one token, or the
// token of its first "NAME TOKEN" line (an admin's file).
func tokenOf(file string) string {
	for _, line := range strings.Split(file, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			return f[len(f)-1]
		}
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// ServerURL is a fleet command's server: flagValue (--server), else
// $AIRLOCK_SERVER, else the local server.
func ServerURL(env *Env, flagValue string) string {
	return firstNonEmpty(flagValue, env.Getenv("AIRLOCK_SERVER"), "http://"+DefaultServerAddr)
}

// ReadTokenFile is readTokenFile, for the fleet's own commands.
func ReadTokenFile(env *Env, flagValue, envVar, name, what string) (string, error) {
	return readTokenFile(env, flagValue, envVar, name, what)
}

// Usagef makes a usage error (exit 2), for the fleet's own commands.
func Usagef(format string, a ...any) error { return usagef(format, a...) }

// AbsFrom is p made absolute against the caller's directory.
func AbsFrom(env *Env, p string) string { return absFrom(env, p) }

// FleetDir is a fleet command's state directory: the flag, else
// <airlock's state directory>/<name> ($XDG_STATE_HOME/airlock/<name>, else
// ~/.local/state/airlock/<name>).
func FleetDir(env *Env, flagValue, name string) (string, error) {
	if flagValue != "" {
		return absFrom(env, flagValue), nil
	}
	d, err := stateDir(env)
	if err != nil {
		return "", errs.Unavailablef("no state directory (set --state, $XDG_STATE_HOME or $HOME)")
	}
	return filepath.Join(d, name), nil
}
