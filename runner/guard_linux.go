package runner

import (
	"encoding/json"
	"os"
	"os/exec"
	"syscall"

	"github.com/airlock-run/airlock/sandbox"
)

// guardProc is the cleanup guard of one run (see sandbox.Guard): started
// before the box, told bubblewrap's pid, told "done" after the run cleaned
// up. If airlock dies first, the guard's input ends and it cleans up.
type guardProc struct {
	cmd *exec.Cmd
	w   *os.File
}

func startGuard(exe string, stubs []sandbox.Stub, cg *group) (*guardProc, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:  exe,
		Args:  []string{exe, sandbox.InitArg, sandbox.GuardArg},
		Env:   []string{"GOMAXPROCS=1"},
		Stdin: r,
		Dir:   "/",
		// Its own session: a terminal's hangup or ^C that ends airlock
		// must not end the guard too.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	r.Close()
	cfg := sandbox.GuardConfig{Stubs: stubs, Runner: os.Getpid()}
	if cg != nil {
		cfg.CgroupVersion, cfg.Cgroups = cg.version, cg.paths()
	}
	data, _ := json.Marshal(cfg)
	data = append(data, '\n')
	if _, err := w.Write(data); err != nil {
		w.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	return &guardProc{cmd: cmd, w: w}, nil
}

func (g *guardProc) started(pid int) {
	data, _ := json.Marshal(sandbox.GuardPid{Pid: pid})
	g.w.Write(append(data, '\n'))
}

func (g *guardProc) done() {
	g.w.Write([]byte(sandbox.GuardDone + "\n"))
	g.w.Close()
	g.cmd.Wait()
}
