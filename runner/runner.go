// Package runner is the only code in airlock that starts processes on the
// host. It runs one command at the concrete tier the caller resolved
// (sandbox.Resolve; auto is refused), in the box sandbox.Plan made, with
// what differs between tiers behind one small interface (tier_linux.go);
// it enforces the wall-clock limit, the output cap and the cgroup limits,
// makes sure no process of the run outlives it, and describes where and how
// the command ran so that a claim of isolation is kept as evidence.
//
// It decides no policy: the caller (the mediator, `airlock run`) has already
// decided, and hands over a sandbox.Spec built from the policy. Anything may
// import it except the pure packages (policy, netrule, fit).
package runner

import (
	"io"
	"sync"
	"time"

	"github.com/airlock-run/airlock/sandbox"
)

// Request is one command to run.
type Request struct {
	// Argv is the command; Argv[0] is looked up on the PATH of Spec.Env
	// (inside the box for tier 1) when it has no slash.
	Argv []string
	// Spec is the confinement asked for.
	Spec sandbox.Spec
	// Tier is the tier to run at, concrete: sandbox.TierAuto is refused
	// (errs.Invalid), since only the kernel resolves it (sandbox.Resolve).
	// A tier the host cannot give is an error, never a fallback.
	Tier sandbox.Tier
	// Stdin is the command's input; nil is empty input.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; nil discards it. The
	// box never receives the caller's own descriptors: output crosses a
	// pipe, so a terminal is never reachable from inside.
	Stdout, Stderr io.Writer
	// OutputCap bounds the bytes passed on from stdout and stderr
	// together; the rest is dropped and Result.Truncated set. 0 is no cap.
	OutputCap int64
	// BeforeStart, when set, runs once the box is planned and before
	// anything of the command's starts (bubblewrap, the command itself,
	// a warm box's call); an error ends the run there, with nothing of it
	// started, and is the run's error. The kernel waits in it for the
	// record of the decision that allowed the command, written beside
	// the plan. Nil runs nothing.
	BeforeStart func() error
	// Ended, when set, is given the run's result and error as soon as the
	// command has ended and its box is empty, before the host side of
	// the box is torn down (its cgroup, descriptors and placeholders):
	// the kernel records the run in it, so the record's fsync runs beside
	// the teardown. Run calls it once the command started, and returns
	// after the teardown with the same result and error; Pool.Run calls
	// it once a warm box's call is over, before the call's plan is closed
	// and the box handed back to be cleared, and returns the same. Start
	// never calls it. Nil calls nothing.
	Ended func(Result, error)
}

// beforeStart runs req.BeforeStart, when set.
func (req Request) beforeStart() error {
	if req.BeforeStart == nil {
		return nil
	}
	return req.BeforeStart()
}

// Result is how the command ended.
type Result struct {
	// ExitCode is the command's own status, 124 when the wall-clock limit
	// ended it, 128+N when signal N did.
	ExitCode int `json:"exit_code"`
	// Signal is the signal that ended the command, 0 if none.
	Signal int `json:"signal,omitempty"`
	// WallTimeout is set when the wall-clock limit ended the command.
	WallTimeout bool `json:"wall_timeout,omitempty"`
	// Description is where and how it ran.
	Description Description `json:"description"`
	// Truncated is set when output beyond OutputCap was dropped.
	Truncated bool `json:"truncated,omitempty"`
}

// Description is the evidence of where and how a command ran: JSON, kept in
// the audit record and the --report file.
type Description struct {
	Tier       int      `json:"tier"`
	Mechanism  string   `json:"mechanism"` // "bubblewrap" or "none"
	Version    string   `json:"version,omitempty"`
	Seccomp    bool     `json:"seccomp"`
	Namespaces []string `json:"namespaces,omitempty"`
	Limits     Limits   `json:"limits"`
	// Protected reports whether protected paths were held read-only.
	Protected bool     `json:"protected_paths"`
	Workdir   string   `json:"workdir"`
	Writable  bool     `json:"writable"`
	Network   string   `json:"network"` // "none", "egress proxy" or "host"
	Env       []string `json:"env_names,omitempty"`
	// DurationMS is the wall time of the run in milliseconds.
	DurationMS int64    `json:"duration_ms"`
	Notes      []string `json:"notes,omitempty"`
}

// Limits are the limits asked for and how they were enforced.
type Limits struct {
	sandbox.Limits
	// Cgroup is "v1", "v2" or "" when no cgroup was used.
	Cgroup string `json:"cgroup,omitempty"`
	// Controllers are the cgroup controllers the box was placed in.
	Controllers []string `json:"controllers,omitempty"`
	// OOM is set when the memory limit was hit.
	OOM bool `json:"oom,omitempty"`
}

// capWriter passes on at most cap bytes shared between stdout and stderr.
type capWriter struct {
	mu        *sync.Mutex
	left      *int64
	truncated *bool
	w         io.Writer
}

func (c capWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if c.w == nil {
		return n, nil
	}
	if *c.left >= 0 && int64(len(p)) > *c.left {
		p = p[:*c.left]
		*c.truncated = true
	}
	if *c.left >= 0 {
		*c.left -= int64(len(p))
	}
	if len(p) > 0 {
		if _, err := c.w.Write(p); err != nil {
			// A reader that went away must not stall the command.
			c.w = nil
		}
	}
	return n, nil
}

// outputs wraps the request's writers with the shared cap. A nil writer
// still gets a pipe, so the command never holds one of airlock's
// descriptors.
func outputs(req Request) (stdout, stderr io.Writer, truncated func() bool) {
	mu := &sync.Mutex{}
	left := int64(-1)
	if req.OutputCap > 0 {
		left = req.OutputCap
	}
	tr := false
	o := capWriter{mu: mu, left: &left, truncated: &tr, w: req.Stdout}
	e := capWriter{mu: mu, left: &left, truncated: &tr, w: req.Stderr}
	return o, e, func() bool { mu.Lock(); defer mu.Unlock(); return tr }
}

func envNames(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				out = append(out, kv[:i])
				break
			}
		}
	}
	return out
}

func since(t time.Time) int64 { return time.Since(t).Milliseconds() }
