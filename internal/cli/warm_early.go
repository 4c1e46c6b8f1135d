package cli

import (
	"io"

	"github.com/airlock-run/airlock/internal/warmrun"
	"github.com/airlock-run/airlock/internal/wiring"
)

// read reads, beside the server's checks of the caller and before any
// answer, what the call's kernel build reads first (its policy): the flags
// as the run will parse them, then wiring.ReadEarly, which writes nothing.
// A call that goes cold drops it.
func (s *warmServer) read(call *warmrun.Call) any {
	e := &Env{Stdout: io.Discard, Stderr: io.Discard, Environ: call.Env, Dir: call.Dir}
	kf, _, err := parseRunFlags(e, call.Args)
	if err != nil {
		return nil // the run fails on its own flags
	}
	if callerFiles(call) != "" {
		return nil // the call goes cold: its policy is not read here
	}
	return wiring.ReadEarly(wiring.Config{PolicyFile: *kf.policy, Workdir: *kf.workdir, Dir: call.Dir, Getenv: e.Getenv})
}

// earlyOf is what read gave for call, nil when it read nothing.
func earlyOf(call *warmrun.Call) *wiring.Early {
	early, _ := call.Early().(*wiring.Early)
	return early
}
