package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/warmrun"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/sandbox"
)

const warmLong = `Serve this user's 'airlock run' calls from warm boxes, in the foreground.

It listens on DIR/warm.sock (DIR: --socket-dir, else $XDG_RUNTIME_DIR/airlock,
else /tmp/airlock-<uid>; a directory only you may enter). 'airlock run' hands
its whole invocation to it (arguments, environment, working directory,
standard streams and terminal) and the server runs it exactly as 'airlock run'
would, with the same policy, audit and approvals, in a box kept warm for the
next call of the same confinement. A run that would behave otherwise here
(another airlock binary, user, group, namespace, cgroup, umask, resource
limit, capability set, no_new_privs or seccomp filter, affinity, nice value,
I/O priority, oom_score_adj, ignored or blocked signals, PATH, HOME, TMPDIR
or XDG directory) runs cold in its own process; AIRLOCK_WARM=verbose says
why, AIRLOCK_WARM=off never hands over.

It ends on SIGTERM or SIGINT, and after --idle without a call.`

func warmCmd() *Command {
	return &Command{
		Name: "warm", Usage: "[--idle D] [--socket-dir DIR]", Short: "serve this user's runs from warm boxes", Long: warmLong,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock warm", "[--idle D] [--socket-dir DIR]", warmLong)
			idle := fs.Duration("idle", 30*time.Minute, "stop after `duration` without a call (0: never)")
			dir := fs.String("socket-dir", approvals.DefaultSocketDir(env.Getenv), "the `directory` of the socket")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return usagef("unexpected argument %q (see airlock warm --help)", fs.Arg(0))
			}
			if *idle < 0 {
				return usagef("--idle %s: want 0 or more", *idle)
			}
			return serveWarm(ctx, env, absFrom(env, *dir), *idle)
		},
	}
}

// serveWarm listens in dir and serves calls until ctx ends or idle passes.
func serveWarm(ctx context.Context, env *Env, dir string, idle time.Duration) error {
	if err := dropTerminal(); err != nil {
		return err
	}
	srv, err := warmrun.Listen(dir, env.Log)
	if err != nil {
		return err
	}
	// The process's working directory is read by the planner (no host
	// program is taken from it): the socket's directory holds none, so
	// the server's own cwd weighs on no call.
	if err := os.Chdir(dir); err != nil {
		return errs.Wrap(errs.Unavailable, err, "warm: chdir %s", dir)
	}
	s := &warmServer{env: env, procEnv: processEnv(), boxed: sandbox.Probe().Tier() >= sandbox.Tier1}
	defer s.close()
	fmt.Fprintf(env.Stderr, "airlock: warm: serving on %s\n", srv.Path())
	return srv.Serve(ctx, warmrun.Handler{Check: s.check, Read: s.read, Run: s.run}, idle)
}

// dropTerminal gives up the server's controlling terminal, if it has one:
// a command run unboxed (tier 0) inherits its parent's session, and a cold
// one has its caller's terminal or none, never the server's. A session
// leader cannot give its terminal up without hanging up its foreground
// group, so it is refused.
func dropTerminal() error {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil // no controlling terminal
	}
	defer tty.Close()
	if sid, _ := unix.Getsid(0); sid == os.Getpid() {
		return errs.Unavailablef("warm: this process leads the session of its terminal; start it without one (setsid -f airlock warm) or as a job of a shell")
	}
	if err := unix.IoctlSetInt(int(tty.Fd()), unix.TIOCNOTTY, 0); err != nil {
		return errs.Wrap(errs.Unavailable, err, "warm: give up the controlling terminal")
	}
	return nil
}

// warmServer is the server's side of the calls: one session of warm boxes
// shared by every call, made with the first kernel (its boxes run that
// kernel's airlock binary, the server's own for every call).
type warmServer struct {
	env     *Env
	procEnv map[string]string
	// boxed says the host gives a box: --sandbox auto is not tier 0.
	boxed   bool
	once    sync.Once
	session *mediator.Session
	// tails is the audit log's last line the server's runs wrote: the
	// next run's open takes the chain up from it without parsing.
	tails audit.TailCache
}

func (s *warmServer) close() {
	if s.session != nil {
		s.session.Close()
	}
}

// processVars are the variables the kernel reads from its own process
// rather than from the caller's environment it is given (the PATH host
// programs are found on, the home and XDG directories of git's global
// config, kept homes and lock files, the temporary directory; the trust
// roots the egress proxy checks an intercepted host's certificate with,
// which crypto/x509 reads once per process, and GODEBUG's TLS and X.509
// settings, read at the process's start): a call runs warm only when the
// caller's equal the server's.
var processVars = []string{"PATH", "HOME", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "GODEBUG"}

func processEnv() map[string]string {
	m := map[string]string{}
	for _, k := range processVars {
		m[k] = os.Getenv(k)
	}
	return m
}

// check is why call must run cold, "" when it may run warm: what the
// kernel reads from its own process must be the caller's, and no host
// program may lie under the caller's working directory (a cold run refuses
// programs there; the server works elsewhere).
func (s *warmServer) check(call *warmrun.Call) string {
	e := &Env{Environ: call.Env}
	for _, k := range processVars {
		if e.Getenv(k) != s.procEnv[k] {
			return "another " + k + " than the server's"
		}
	}
	dirs := append(filepath.SplitList(s.procEnv["PATH"]), filepath.Dir(s.env.Exe))
	// Each directory's links are resolved for every call (a link may be
	// changed between calls), once: PATH often names one twice.
	wd := resolvedPath(call.Dir)
	seen := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		if !filepath.IsAbs(d) {
			return "a relative PATH entry (" + d + "), read from the working directory"
		}
		if within(d, call.Dir) || within(resolvedPath(d), wd) {
			return "a host program directory (" + d + ") lies in the working directory"
		}
	}
	if r := callerFiles(call); r != "" {
		return r
	}
	if isTerm(call.Stdin) && isTerm(call.Stderr) && call.TTY == nil && call.CTTY != 0 {
		return "a terminal the client did not send"
	}
	if call.CTTY != 0 && mayRunUnboxed(call, s.boxed) {
		return "an unboxed run (tier 0) would have the caller's terminal, which the server cannot give it"
	}
	return ""
}

// callerFiles is why the files call names (its policy, --audit, --report,
// AIRLOCK_TRACE_FILE) cannot be opened by the server as the caller's own
// process would open them ("" when they can; flags that do not parse fail
// the run alike warm). It comes before anything reads the policy.
func callerFiles(call *warmrun.Call) string {
	e := &Env{Stdout: io.Discard, Stderr: io.Discard, Environ: call.Env, Dir: call.Dir}
	kf, _, err := parseRunFlags(e, call.Args)
	if err != nil {
		return ""
	}
	policy := *kf.policy
	if policy == "" {
		policy = filepath.Join(absFrom(e, *kf.workdir), wiring.DefaultPolicyFile)
	}
	if r := notRegular(absFrom(e, policy)); r != "" {
		return r
	}
	for _, p := range []string{policy, *kf.audit, *kf.report, e.Getenv("AIRLOCK_TRACE_FILE")} {
		if p == "" {
			continue
		}
		if r := ownProcessPath(absFrom(e, p)); r != "" {
			return r
		}
	}
	return ""
}

// mayRunUnboxed reports whether call may run at tier 0, where the command
// is the kernel's child in the kernel's session: --sandbox off (or auto on
// a host with no box, !boxed), or a policy of isolation none. It reads the flags and the policy as the run
// will, and does nothing else; a run that fails to read either fails
// alike warm.
func mayRunUnboxed(call *warmrun.Call, boxed bool) bool {
	e := &Env{Stdout: io.Discard, Stderr: io.Discard, Environ: call.Env, Dir: call.Dir}
	kf, _, err := parseRunFlags(e, call.Args)
	if err != nil {
		return false
	}
	switch t, err := kf.tier("airlock run"); {
	case err != nil:
		return false
	case t == sandbox.Tier0, t == sandbox.TierAuto && !boxed:
		return true
	}
	wd, err := wiring.Workdir(call.Dir, *kf.workdir)
	if err != nil {
		return false
	}
	p, _, err := wiring.LoadPolicy(call.Dir, wd, *kf.policy, e.Getenv)
	return err == nil && p.Isolation == "none"
}

func within(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func resolvedPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func isTerm(f *os.File) bool { return f != nil && term.IsTerminal(int(f.Fd())) }

// run runs call as cold `airlock run` would in the caller's process: the
// same function, an Env made of what the caller handed over (its
// environment, directory, streams and terminal; nothing of the server's),
// and the server's session of warm boxes.
func (s *warmServer) run(ctx context.Context, call *warmrun.Call) int {
	stdin, stdout, stderr := call.Streams()
	env := &Env{
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Environ: call.Env, Dir: call.Dir, Exe: s.env.Exe,
		IsTerminal:     isTerm(call.Stdin) && isTerm(call.Stderr),
		StdoutTerminal: isTerm(call.Stdout), StderrTerminal: isTerm(call.Stderr),
		warm: &warmCall{tty: call.TTY, pid: call.Pid, server: s, early: earlyOf(call)},
	}
	return Main(ctx, append([]string{"run"}, call.Args...), env)
}

// warmCall is what a run the server serves has besides a cold one: the
// caller's terminal (which it sent) in place of /dev/tty, the server's
// session, and no second hand-over.
type warmCall struct {
	tty *os.File
	// pid is the caller's: its escalations are named by it, and its
	// approvals socket too, as in its own process.
	pid    int
	server *warmServer
	// early is the policy read beside the server's checks; nil reads it
	// in the kernel's build, as cold.
	early *wiring.Early
}

// configure has the kernel ask a person on the caller's terminal, never
// on the server's own /dev/tty, and name its escalations and approvals
// socket by the caller's pid. A nil w (a cold run) changes nothing.
func (w *warmCall) configure(cfg *wiring.Config) {
	if w == nil {
		return
	}
	cfg.BrokerPid = w.pid
	cfg.Early = w.early
	if w.server != nil {
		cfg.AuditTails = &w.server.tails
	}
	cfg.OpenTerminal = func() (*os.File, error) {
		if w.tty == nil {
			return nil, errs.Unavailablef("approvals: no terminal")
		}
		// Not reopened through /proc/self/fd: that link names
		// /dev/tty, which here is the server's own terminal. The
		// descriptor is the caller's fresh open of /dev/tty (no shell
		// shares it); made non-blocking, it is one the runtime polls,
		// so closing it at the call's end ends the broker's reader,
		// which must never read the caller's terminal after the call.
		fd, err := unix.FcntlInt(w.tty.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "approvals: terminal")
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return nil, errs.Wrap(errs.Unavailable, err, "approvals: terminal")
		}
		f := os.NewFile(uintptr(fd), "/dev/tty")
		return f, nil
	}
}

// bind has ctx carry the server's session; a nil w (a cold run) returns
// ctx as it is.
func (w *warmCall) bind(ctx context.Context, k *wiring.Kernel) context.Context {
	if w == nil {
		return ctx
	}
	if scratchWorkdir(k.World.Workdir) {
		return ctx
	}
	s := w.server
	s.once.Do(func() { s.session = k.NewSession(0) })
	return s.session.Bind(ctx)
}

// boxScratch are the directories a warm box empties after every call
// (sandbox's warm scratch): a working directory that is one of them or
// holds one is bound over what the box must empty, so such a call runs in
// a fresh box of its own, as cold.
var boxScratch = []string{"/tmp", "/var/tmp", "/run", "/dev", "/dev/mqueue"}

func scratchWorkdir(wd string) bool {
	resolved := resolvedPath(wd)
	for _, d := range boxScratch {
		if within(d, wd) || within(d, resolved) {
			return true
		}
	}
	return false
}

// handOverWarm gives the run to this user's warm server when one listens and
// AIRLOCK_WARM is not "off". ok is false when the run is to go cold (here,
// in this process); else err is the run's end (its exit code, or a lost
// server's 125). It reads nothing but its Env and the socket before.
func handOverWarm(ctx context.Context, env *Env, args []string) (err error, ok bool) {
	mode := env.Getenv(warmrun.Env)
	if env.warm != nil || env.WarmTried || mode == "off" || !filepath.IsAbs(env.Dir) {
		return nil, false
	}
	var fds []int
	for _, s := range []any{env.Stdin, env.Stdout, env.Stderr} {
		f, isFile := s.(*os.File)
		if !isFile {
			return nil, false // a test's buffers: nothing to hand over
		}
		fds = append(fds, int(f.Fd()))
	}
	req := warmrun.Request{Args: args, Env: env.Environ, Dir: env.Dir}
	if env.IsTerminal {
		// As cold: the person is asked on the controlling terminal.
		if tty, err := approvals.OpenTerminal(); err == nil {
			defer tty.Close()
			req.TTY, fds = true, append(fds, int(tty.Fd()))
		}
	}
	r := warmrun.HandOver(ctx, approvals.DefaultSocketDir(env.Getenv), req, fds)
	switch {
	case r.Outcome == warmrun.Ran:
		return &ExitError{Code: r.Code}, true
	case r.Outcome == warmrun.Lost:
		fmt.Fprintf(env.Stderr, "airlock: run: %s\n", r.Reason)
		return &ExitError{Code: errs.ExitCannotRun}, true
	case r.Warn != "":
		fmt.Fprintf(env.Stderr, "airlock: %s\n", r.Warn)
	case mode == "verbose" && r.Reason != "":
		fmt.Fprintf(env.Stderr, "airlock: warm: running cold: %s\n", r.Reason)
	}
	return nil, false
}
