//go:build linux

package boxinit

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/sandbox/boxconf"
	"github.com/airlock-run/airlock/sandbox/landlock"
	"github.com/airlock-run/airlock/sandbox/lookpath"
)

// applyWalls restricts the calling thread, and everything it starts, to
// executing what w.Exec lists and writing beneath w.Write.
// The rules are built as the host's WallRules builds them; what they
// handle must be what the host's build said (boxconf.Walls.Access).
func applyWalls(w *boxconf.Walls) error {
	r := landlock.Rules{WriteWall: w.Write != nil, Write: w.Write, Scope: w.Scope}
	if w.Exec != nil {
		r.ExecWall, r.Exec, r.Hide = true, w.Exec.Paths, w.Exec.Hide
	}
	abi, err := landlock.ABI()
	if err != nil {
		return err
	}
	if fs, scoped := landlock.Handled(r, abi); boxconf.AccessWord(fs, scoped) != w.Access {
		exe, _ := os.Executable()
		return fmt.Errorf("the in-box code %s is of another build than the airlock that planned this box: it would handle Landlock rights %q, the host planned %q; nothing ran: build airlock-box again beside airlock (scripts/setup.sh does both)", exe, boxconf.AccessWord(fs, scoped), w.Access)
	}
	_, err = landlock.Restrict(r)
	return err
}

// maxWalls bounds the walls' encoding: the command's environment is most
// of it, and the host refuses one beyond what a pipe can be grown to.
const maxWalls = 4 << 20

// readWalls reads the walls from descriptor fd to its end and closes it.
// Their encoding is boxconf's own (EncodeWalls), read by hand: no
// reflection at the start of every box. Walls of another encoding, or of
// another protocol, are another build's: nothing runs.
func readWalls(fd int) (boxconf.Walls, error) {
	data, err := readAll(fd, maxWalls)
	unix.Close(fd)
	if err != nil {
		return boxconf.Walls{}, err
	}
	w, err := boxconf.DecodeWalls(data)
	if errors.Is(err, boxconf.ErrWallsFormat) {
		return boxconf.Walls{}, otherBuild("walls in an encoding this build does not read")
	}
	if err == nil {
		err = sameProtocol(w.Proto)
	}
	if err != nil {
		return boxconf.Walls{}, err
	}
	return w, nil
}

// readAll reads descriptor fd to its end, at most limit bytes.
func readAll(fd, limit int) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, fmt.Errorf("read descriptor %d: %v", fd, err)
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, fmt.Errorf("descriptor %d holds more than %d bytes", fd, limit)
		}
	}
}

// refusedExec is what the wall's refusal of the command itself says.
func refusedExec(name string) string {
	return fmt.Sprintf("airlock: exec wall: the kernel refused to execute %s: only the programs the policy lists (shell.allow) may run here", name)
}

// execWall is the exec step of a box without an init: bubblewrap, under
// airlock's seccomp filter and no_new_privs (or, when the step seals the
// writable mounts, with two capabilities and no filter, which the step then
// installs itself), starts `InitArg --exec-wall-fd
// N -- argv...`; this reads the walls from descriptor N, applies them and
// executes argv in its own place, so the command is the box's process as
// before, only walled. A wall that cannot be applied ends the run (125)
// before anything of the command ran.
func execWall(args []string) int {
	// Landlock restricts one thread; the exec below replaces the process
	// from that same thread.
	runtime.LockOSThread()
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "airlock: box: exec wall: want "+boxconf.FlagExecWall+" N -- command...")
		return 125
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil || fd < 3 {
		fmt.Fprintf(os.Stderr, "airlock: box: exec wall: bad descriptor %q\n", args[0])
		return 125
	}
	argv := args[2:]
	w, err := readWalls(fd)
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: landlock walls: read them: %v\n", err)
		return 125
	}
	// The command's environment is the walls' own: this step started
	// with none (boxconf.Walls.Env), so nothing of the box's steered its
	// loader or its runtime. PWD names the working directory, as
	// bubblewrap would set it for the command.
	env := append([]string(nil), w.Env...)
	dir, _ := os.Getwd()
	if lookpath.EnvValue(env, "PWD") == "" && dir != "" {
		env = append(env, "PWD="+dir)
	}
	if w.Listen != nil { // a box with network: net_linux.go
		extra, err := handOutListeners(w.Listen)
		if err != nil {
			fmt.Fprintf(os.Stderr, "airlock: box: %v\n", err)
			return 125
		}
		env = append(env, extra...)
	}
	path, err := lookpath.LookPath(argv[0], lookpath.EnvValue(env, "PATH"), dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: %v inside the box\n", err)
		return 127
	}
	// Order matters: the seal needs its capabilities and mount calls,
	// which the walls and the filter then take away for good.
	if len(w.NoExec) > 0 {
		if err := sealWritten(w.NoExec); err != nil {
			fmt.Fprintf(os.Stderr, "airlock: box: %v\n", err)
			return 125
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: prctl(PR_SET_NO_NEW_PRIVS): %v\n", err)
		return 125
	}
	if err := applyWalls(&w); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: landlock walls: %v\n", err)
		return 125
	}
	if w.Seccomp {
		if err := installSeccomp(w.Filter); err != nil {
			fmt.Fprintf(os.Stderr, "airlock: box: seccomp: %v\n", err)
			return 125
		}
	}
	// Nothing of bubblewrap's or this step's descriptors reaches the
	// command.
	if err := closeRangeExec(); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: close inherited descriptors: %v\n", err)
		return 125
	}
	err = unix.Exec(path, argv, env)
	if errors.Is(err, unix.EACCES) && w.Exec != nil {
		fmt.Fprintln(os.Stderr, refusedExec(argv[0]))
		return 126
	}
	fmt.Fprintf(os.Stderr, "airlock: box: execute %s: %v\n", argv[0], err)
	return 126
}
