package boxinit

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/sandbox/boxconf"
	"github.com/airlock-run/airlock/sandbox/lookpath"
)

// serveArgs are the flags of a warm box's init.
type serveArgs struct {
	cfg, status, sock int
	scratch           []string
}

// serveFlags reads the init's flags when they select the serving mode
// (FlagServe among them); ok is false otherwise, and parseFlags reads them.
func serveFlags(args []string) (serveArgs, bool) {
	a := serveArgs{cfg: -1, status: -1, sock: -1}
	serving := false
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case boxconf.FlagServe:
			serving = true
			a.sock, _ = strconv.Atoi(args[i+1])
		case boxconf.FlagScratch:
			a.scratch = append(a.scratch, args[i+1])
		case boxconf.FlagConfig:
			a.cfg, _ = strconv.Atoi(args[i+1])
		case boxconf.FlagStatus:
			a.status, _ = strconv.Atoi(args[i+1])
		}
	}
	return a, serving
}

// serveMain is the init of a warm box: it sets the box up once as run does
// for one target (pins checked, descriptors closed on exec, no_new_privs,
// the Landlock walls, the seccomp filter), then runs calls one at a time
// as they come over the control socket, each in a session of its own, and
// after each ends every process in the box and empties the scratch
// directories before it reads the next. It returns when the runner closes
// the socket.
func serveMain(a serveArgs) int {
	if a.cfg < 3 || a.status < 3 || a.sock < 3 {
		fmt.Fprintln(os.Stderr, "airlock box init: serve: missing or bad descriptor flags")
		return 125
	}
	if st := os.NewFile(uintptr(a.status), "status"); st != nil {
		// The serving box reports on its socket; the status pipe only
		// tells the runner, by closing, that the init is gone.
		defer st.Close()
	}
	sock := os.NewFile(uintptr(a.sock), "control")
	ready, walls, roots, first, err := serveSetup(a.cfg, a.scratch)
	if err != nil {
		ready.Error = err.Error()
	}
	if werr := writeLine(sock, ready); werr != nil || err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: %v\n", errors.Join(err, werr))
		return 125
	}
	// Signals from inside the box (a call sending SIGTERM to PID 1) are
	// taken and dropped: a handled signal, unlike an ignored one, goes
	// back to its default in a call's process at exec.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGPIPE, syscall.SIGTSTP,
		syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGVTALRM, syscall.SIGPROF, syscall.SIGXCPU, syscall.SIGXFSZ)
	go func() {
		for range sigs {
		}
	}()
	for {
		call, files, err := readCall(sock)
		arrived := time.Now()
		if err == io.EOF {
			return 0
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "airlock: box: serve: %v\n", err)
			return 125
		}
		done, ran := serveCall(call, files, walls, arrived)
		done.Kind = boxconf.KindDone
		if err := writeLine(sock, done); err != nil || done.Dirty != "" {
			return 125
		}
		// The call's result is with the runner; the box is cleared while
		// it reads it, and takes no call before it has said so.
		clear := boxconf.BoxClear{Kind: boxconf.KindClear}
		if ran {
			clear.Dirty = clearCall(roots, first)
		}
		if err := writeLine(sock, clear); err != nil || clear.Dirty != "" {
			return 125
		}
	}
}

// serveSetup reads the configuration and puts the box's standing on this
// thread, which stays locked to the calling goroutine for the init's life:
// every call is forked from it and inherits no_new_privs, the walls and the
// filter; the filter (TSYNC) covers every other thread of the init too.
func serveSetup(cfgFD int, scratch []string) (boxconf.Ready, *boxconf.Walls, []*scratchRoot, standing, error) {
	var ready boxconf.Ready
	var first standing
	// Not dumpable: a call, running as the same user, cannot open
	// /proc/1/fd (the control socket), /proc/1/mem or /proc/1/environ.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return ready, nil, nil, first, fmt.Errorf("prctl(PR_SET_DUMPABLE): %v", err)
	}
	cfg, err := readConfig(cfgFD)
	if err != nil {
		return ready, nil, nil, first, err
	}
	if cfg.Net != nil {
		// The forwarder's token and placeholders belong to one call's
		// egress proxy; such boxes are made per call.
		return ready, nil, nil, first, errors.New("a warm box has no network")
	}
	if err := closeRangeExec(); err != nil {
		return ready, nil, nil, first, fmt.Errorf("close inherited descriptors: %v", err)
	}
	// The first state of the scratch, before any call ran.
	roots, err := snapshotScratch(scratch)
	if err != nil {
		return ready, nil, nil, first, err
	}
	if ready.Seccomp, err = takeStanding(cfg); err != nil {
		return ready, nil, nil, first, err
	}
	// What calls inherit from this thread, as the box began
	// (inherit_linux.go): put back after every call.
	if first, err = readStanding(); err != nil {
		return ready, nil, nil, first, err
	}
	ready.Ready = true
	return ready, cfg.Walls, roots, first, nil
}

func writeLine(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// readCall reads one Call and the three descriptors that come with its
// first bytes. Nothing is buffered across calls: the runner sends the next
// call only after this one's CallDone.
func readCall(sock *os.File) (boxconf.Call, []*os.File, error) {
	var call boxconf.Call
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(3*4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), hdr[:], oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return call, nil, fmt.Errorf("receive a call: %v", err)
	}
	if n == 0 {
		return call, nil, io.EOF
	}
	files, err := takeFiles(oob[:oobn])
	if err != nil {
		return call, nil, err
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	if n < 4 {
		if _, err := io.ReadFull(sock, hdr[n:]); err != nil {
			closeAll()
			return call, nil, fmt.Errorf("receive a call: %v", err)
		}
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > boxconf.MaxCall || len(files) != 3 {
		closeAll()
		return call, nil, fmt.Errorf("a call of %d bytes with %d descriptors", size, len(files))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(sock, body); err != nil {
		closeAll()
		return call, nil, fmt.Errorf("receive a call: %v", err)
	}
	if err := json.Unmarshal(body, &call); err != nil || len(call.Argv) == 0 || call.Argv[0] == "" {
		closeAll()
		return call, nil, fmt.Errorf("a call that is not one: %v", err)
	}
	return call, files, nil
}

// takeFiles turns the descriptors of one control message into files.
func takeFiles(oob []byte) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("control message: %v", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "call"))
		}
	}
	return files, nil
}

// serveCall runs one call to its end: started from the walled thread in a
// session of its own, reaped with every orphan until it exits, then every
// other process in the box killed (kill(-1) from PID 1 reaches all of them,
// whatever session, group or parent they moved to). ran reports whether
// anything of the call ran, and so whether the box must be cleared
// (clearCall) before the next.
func serveCall(call boxconf.Call, files []*os.File, walls *boxconf.Walls, arrived time.Time) (done boxconf.CallDone, ran bool) {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	env := append([]string(nil), call.Env...)
	if lookpath.EnvValue(env, "PWD") == "" {
		env = append(env, "PWD="+call.Dir)
	}
	path, err := lookpath.LookPath(call.Argv[0], lookpath.EnvValue(env, "PATH"), call.Dir)
	if err != nil {
		done.Error, done.NotFound = fmt.Sprintf("%v inside the box", err), true
		return done, false
	}
	proc, err := os.StartProcess(path, call.Argv, &os.ProcAttr{
		Dir: call.Dir, Env: env, Files: files,
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil && walls != nil && walls.Exec != nil && errors.Is(err, unix.EACCES) {
		fmt.Fprintln(files[2], refusedExec(call.Argv[0]))
		done.Exit, done.Refused = 126, true
		return done, false
	}
	if err != nil {
		done.Error = fmt.Sprintf("start %s: %v", call.Argv[0], err)
		return done, false
	}
	done.Started = true
	started := time.Now()
	done.StartUS = started.Sub(arrived).Microseconds()
	pid := proc.Pid
	proc.Release() // reaped below with wait4, not through os.Process
	for _, f := range files {
		f.Close()
	}
	files = nil

	// The wall-clock timer may fire late (Stop does not wait for it):
	// once the call is over it must not kill the next call's processes.
	var timedOut atomic.Bool
	var timerMu sync.Mutex
	over := false
	defer func() { timerMu.Lock(); over = true; timerMu.Unlock() }()
	if call.WallMS > 0 {
		t := time.AfterFunc(time.Duration(call.WallMS)*time.Millisecond, func() {
			timerMu.Lock()
			defer timerMu.Unlock()
			if over {
				return
			}
			timedOut.Store(true)
			unix.Kill(-1, unix.SIGKILL)
		})
		defer t.Stop()
	}
	ws, err := reapUntil(pid)
	if err != nil {
		done.Dirty = fmt.Sprintf("wait: %v", err)
		return done, true
	}
	if ws.Signaled() {
		done.Signal = int(ws.Signal())
	} else {
		done.Exit = ws.ExitStatus()
	}
	endAll()
	done.RunUS = time.Since(started).Microseconds()
	done.WallTimeout = timedOut.Load()
	return done, true
}

// clearCall brings the box back to its first state after a call whose
// processes have all ended, and says what could not be ("" when nothing).
// It runs on the walled thread (the init's main goroutine, locked to it).
func clearCall(roots []*scratchRoot, first standing) string {
	// On this thread, the one the next call is forked from: what a call
	// changed of it from outside (limits, priorities, affinity).
	standingErr := errors.Join(restoreStanding(first), netLeft())
	// Off this thread: the walls on it would refuse writes to what the
	// call may not write but its scratch must still be emptied of.
	clean := make(chan string, 1)
	go func() { clean <- clearBox(roots) }()
	dirty := <-clean
	if standingErr != nil {
		dirty = strings.TrimPrefix(dirty+"; "+standingErr.Error(), "; ")
	}
	return dirty
}

// reapUntil reaps every child until pid has exited, and returns how it
// ended.
func reapUntil(pid int) (unix.WaitStatus, error) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ws, err
		}
		if got == pid && (ws.Exited() || ws.Signaled()) {
			return ws, nil
		}
	}
}

// endAll kills every process in the box but this init and reaps them
// until it has no child left: what a call started with setsid, nohup or a
// double fork was reparented here, so nothing of it outlives the call.
func endAll() {
	for {
		unix.Kill(-1, unix.SIGKILL)
		_, err := unix.Wait4(-1, nil, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // ECHILD: nothing is left
			return
		}
	}
}

// netFiles list the sockets of the box's network namespace that outlive
// their processes: TCP connections closing (TIME_WAIT holds a port for a
// minute) and Unix sockets still in flight.
var netFiles = []string{"/proc/net/tcp", "/proc/net/tcp6", "/proc/net/unix"}

// netLeft fails when, with every process of the call ended, the box's
// network namespace still holds a socket: a port a call left taken would
// tell the next call something, and nothing but time clears it, so the
// box is retired.
func netLeft() error {
	var left []string
	for _, f := range netFiles {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6, say
		}
		if err != nil {
			return fmt.Errorf("network: %v", err)
		}
		if n := strings.Count(strings.TrimSpace(string(data)), "\n"); n > 0 {
			left = append(left, fmt.Sprintf("%d in %s", n, f))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("network: sockets outlived the call (%s)", strings.Join(left, ", "))
	}
	return nil
}

// clearIPC removes every System V shared memory segment, message queue and
// semaphore set in the box's IPC namespace (all made by calls: the init
// makes none), and fails when any is left.
func clearIPC() error {
	if os.Getpid() != 1 {
		// Only the box's PID 1 owns its IPC namespace; anywhere else the
		// objects are not a call's.
		return errors.New("ipc: not the box's init (PID 1); left alone")
	}
	if _, err := os.Stat("/proc/sysvipc"); errors.Is(err, os.ErrNotExist) {
		return clearUnlistedIPC() // gVisor's kernel (ipc_unlisted_linux.go)
	}
	kinds := []struct {
		file string
		rm   func(id int) error
	}{
		{"/proc/sysvipc/shm", func(id int) error { _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); return err }},
		{"/proc/sysvipc/msg", func(id int) error { return ipcErr(unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)) }},
		{"/proc/sysvipc/sem", func(id int) error {
			return ipcErr(unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0))
		}},
	}
	var left []string
	for _, k := range kinds {
		ids, err := ipcIDs(k.file)
		if err != nil {
			continue // no /proc/sysvipc: the kernel has no System V IPC
		}
		for _, id := range ids {
			if err := k.rm(id); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIDRM) {
				left = append(left, fmt.Sprintf("%s %d: %v", k.file, id, err))
			}
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("ipc: %s", strings.Join(left, ", "))
	}
	return nil
}

func ipcErr(_, _ uintptr, e unix.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// ipcIDs reads the ids (second column) of a /proc/sysvipc listing.
func ipcIDs(file string) ([]int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var ids []int
	lines := strings.Split(string(data), "\n")
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if id, err := strconv.Atoi(f[1]); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
