package boxinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/sandbox/boxconf"
	"github.com/airlock-run/airlock/sandbox/lookpath"
)

// Main runs the in-box init with the arguments after Arg and returns the exit
// status of the target (125 when the target could not be started).
func Main(args []string) int {
	if len(args) > 0 && args[0] == boxconf.FlagExecWall {
		return execWall(args[1:])
	}
	if len(args) > 0 && args[0] == boxconf.GVisorLaunchArg { // tier 2's launcher, on the host (gvisor_launch_linux.go)
		return gvisorLaunchMain(args[1:])
	}
	if len(args) > 0 && args[0] == boxconf.FlagSeal {
		return sealAndReexec(args)
	}
	if len(args) == 1 && args[0] == boxconf.FlagResetPids { // between a warm box's calls (pidreset_linux.go)
		return resetPids()
	}
	if serve, ok := serveFlags(args); ok { // a warm box (serve_linux.go)
		return serveMain(serve)
	}
	cfgFD, stFD, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock box init: %v\n", err)
		return 125
	}
	status := os.NewFile(uintptr(stFD), "status")
	st := run(cfgFD, status)
	st.Done = true
	data, _ := json.Marshal(st)
	status.Write(append(data, '\n'))
	status.Close()
	switch {
	case st.Error != "":
		fmt.Fprintf(os.Stderr, "airlock: box: %s\n", st.Error)
		return 125
	case st.Signal != 0:
		return 128 + st.Signal
	}
	return st.Exit
}

func parseFlags(args []string) (cfg, st int, err error) {
	cfg, st = -1, -1
	for i := 0; i+1 < len(args); i += 2 {
		n, err := strconv.Atoi(args[i+1])
		if err != nil || n < 3 {
			return 0, 0, fmt.Errorf("bad descriptor %q for %s", args[i+1], args[i])
		}
		switch args[i] {
		case boxconf.FlagConfig:
			cfg = n
		case boxconf.FlagStatus:
			st = n
		default:
			return 0, 0, fmt.Errorf("unknown flag %q", args[i])
		}
	}
	if cfg < 0 || st < 0 {
		return 0, 0, errors.New("missing " + boxconf.FlagConfig + " or " + boxconf.FlagStatus)
	}
	return cfg, st, nil
}

func fail(st boxconf.Status, format string, a ...any) boxconf.Status {
	st.Error = fmt.Sprintf(format, a...)
	return st
}

func run(cfgFD int, status *os.File) boxconf.Status {
	var st boxconf.Status
	// Not dumpable: the target, running as the same user, cannot read this
	// process's memory or environment through /proc, nor ptrace it.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(st, "prctl(PR_SET_DUMPABLE): %v", err)
	}
	cfg, err := readConfig(cfgFD)
	if err != nil {
		return fail(st, "%v", err)
	}
	if len(cfg.Argv) == 0 {
		return fail(st, "no command")
	}
	// Nothing inherited reaches the target: every descriptor above the
	// standard three is closed on exec (bubblewrap's, the caller's leaks,
	// and this init's own pipes).
	if err := closeRangeExec(); err != nil {
		return fail(st, "close inherited descriptors: %v", err)
	}
	env := append([]string(nil), cfg.Env...)
	// PWD names the working directory, as a shell (and bubblewrap, for a
	// box without this init) would set it.
	if lookpath.EnvValue(env, "PWD") == "" {
		env = append(env, "PWD="+cfg.Dir)
	}
	if cfg.Net != nil {
		extra, err := startNet(cfg.Net)
		if err != nil {
			return fail(st, "network forwarder: %v", err)
		}
		env = append(env, extra...)
	}
	path, err := lookpath.LookPath(cfg.Argv[0], lookpath.EnvValue(env, "PATH"), cfg.Dir)
	if err != nil {
		st.NotFound = true
		return fail(st, "%v inside the box", err)
	}

	// The target is started from one locked thread that alone carries
	// no_new_privs and the seccomp filter: the child of fork inherits both
	// from the forking thread, and the rest of this init stays free to run
	// the forwarder.
	if st.Seccomp, err = takeStanding(cfg); err != nil {
		return fail(st, "%v", err)
	}
	stderr := os.Stderr
	if cfg.StderrFD > 2 {
		stderr = os.NewFile(uintptr(cfg.StderrFD), "stderr")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	proc, err := os.StartProcess(path, cfg.Argv, &os.ProcAttr{
		Dir:   cfg.Dir,
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, stderr},
	})
	if err != nil && cfg.Walls != nil && cfg.Walls.Exec != nil && errors.Is(err, unix.EACCES) {
		// The wall refused the command itself: a refusal (126), said on
		// the command's stderr as a shell would.
		fmt.Fprintln(stderr, refusedExec(cfg.Argv[0]))
		st.Exit = 126
		return st
	}
	if err != nil {
		return fail(st, "start %s: %v", cfg.Argv[0], err)
	}
	st.Started = true
	if status != nil {
		data, _ := json.Marshal(st)
		status.Write(append(data, '\n'))
	}
	go func() {
		for s := range sigs {
			proc.Signal(s)
		}
	}()
	// This init is the box's PID 1 (bubblewrap's --as-pid-1: bubblewrap's
	// own reaper would be a dumpable, unfiltered process the target could
	// reach through /proc/1/mem). It reaps every orphan until the target
	// ends; then it exits and the kernel ends whatever is left.
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail(st, "wait: %v", err)
		}
		if pid != proc.Pid {
			continue
		}
		switch {
		case ws.Signaled():
			st.Signal = int(ws.Signal())
		default:
			st.Exit = ws.ExitStatus()
		}
		return st
	}
}

// takeStanding locks the calling goroutine to its thread for good (a
// thread with a filter must never go back to the pool) and puts on it
// no_new_privs and the Landlock walls, then the filter on every thread;
// what the init starts from this thread inherits all of it. It reports
// whether the filter was installed.
func takeStanding(cfg boxconf.Config) (seccomp bool, err error) {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return false, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	// The Landlock walls go on this thread only, before the filter: the
	// target inherits them, the forwarder's threads do not need them.
	if cfg.Walls != nil {
		if err := applyWalls(cfg.Walls); err != nil {
			return false, fmt.Errorf("landlock walls: %v", err)
		}
	}
	if cfg.Seccomp {
		if err := installSeccomp(cfg.Filter); err != nil {
			return false, fmt.Errorf("seccomp: %v", err)
		}
		return true, nil
	}
	return false, nil
}

// readConfig reads the box's configuration from descriptor fd and checks
// that every bind is the inode the host pinned. bubblewrap checks this too
// where it has --ro-bind-fd; an older one binds by path, and this is where
// a swapped link is caught.
func readConfig(fd int) (boxconf.Config, error) {
	var cfg boxconf.Config
	cf := os.NewFile(uintptr(fd), "config")
	data, err := io.ReadAll(io.LimitReader(cf, 16<<20))
	cf.Close()
	if err != nil {
		return cfg, fmt.Errorf("read config: %v", err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("config: %v", err)
	}
	if err := sameProtocol(cfg.Proto); err != nil {
		return cfg, err
	}
	for _, p := range cfg.Pins {
		var s unix.Stat_t
		if err := unix.Lstat(p.Path, &s); err != nil {
			return cfg, fmt.Errorf("bind %s: %v", p.Path, err)
		}
		if uint64(s.Dev) != p.Dev || s.Ino != p.Ino {
			return cfg, fmt.Errorf("bind %s is not the file airlock pinned (it changed between the check and the mount); nothing ran", p.Path)
		}
	}
	return cfg, nil
}

// sameProtocol refuses a configuration planned by another build: the
// host's airlock and this in-box code must read the protocol alike, or a
// field this build does not know (a wall) would be dropped unseen.
func sameProtocol(proto string) error {
	if proto == boxconf.Fingerprint() {
		return nil
	}
	return otherBuild(fmt.Sprintf("protocol %q, this one %q", proto, boxconf.Fingerprint()))
}

// otherBuild is the refusal of what another build's host sent, with what
// told it apart.
func otherBuild(what string) error {
	exe, _ := os.Executable()
	return fmt.Errorf("the in-box code %s is of another build than the airlock that planned this box (%s); nothing ran: build airlock-box again beside airlock (scripts/setup.sh does both)", exe, what)
}

func closeRangeExec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11: mark each one.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return rerr
	}
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		if n > 2 {
			unix.FcntlInt(uintptr(n), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}
