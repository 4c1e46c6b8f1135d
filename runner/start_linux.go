package runner

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sync"
)

// Process is a command started by Start that talks over its standard input
// and output while it runs (an MCP server in a box, for one).
type Process struct {
	// Stdin is the command's standard input; closing it sends EOF.
	Stdin io.WriteCloser
	// Stdout is the command's standard output; it reaches EOF when every
	// process of the box has ended.
	Stdout io.ReadCloser

	r    *run
	cmd  *exec.Cmd
	desc Description // as of the start; the final one is in res
	done chan struct{}
	res  Result
	err  error
	kill sync.Once
}

// Start starts req like Run but returns at once with the command's stdin
// and stdout as pipes (req.Stdin and req.Stdout are ignored; stderr still
// goes to req.Stderr under OutputCap). The box, its limits and wall clock,
// and its teardown are those of Run; ctx ending kills the whole box.
func Start(ctx context.Context, exe string, req Request) (*Process, error) {
	r, err := prepare(exe, req)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		r.finish()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		r.finish()
		return nil, err
	}
	r.stream = &streams{stdin: inR, stdout: outW}
	cmd, err := r.launch()
	// The command holds its ends now; ours would keep EOF from coming.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		r.finish()
		return nil, err
	}
	p := &Process{Stdin: inW, Stdout: outR, r: r, cmd: cmd, done: make(chan struct{}), desc: r.desc}
	p.desc.Notes = append([]string(nil), r.desc.Notes...)
	go func() {
		p.res, p.err = r.wait(ctx, cmd)
		r.finish()
		inW.Close()
		close(p.done)
	}()
	return p, nil
}

// Wait waits for the command to end and reports how, as Run does.
func (p *Process) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}

// Kill ends every process of the box (and its cgroup) and waits for the
// teardown to finish; nothing of the run is left afterwards.
func (p *Process) Kill() error {
	p.kill.Do(func() {
		p.r.killed.Store(true)
		p.r.killAll(p.cmd)
	})
	<-p.done
	return nil
}

// Description is where and how the command runs (final once Wait returns).
func (p *Process) Description() Description {
	select {
	case <-p.done:
		return p.res.Description
	default:
		return p.desc
	}
}
