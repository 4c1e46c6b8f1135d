package wiring

import (
	"github.com/airlock-run/airlock/policy"
)

// Early is the part of Build that only reads, done ahead of it: `airlock
// warm` reads a call's policy while it still checks the caller, before it
// answers. Nothing in it writes, opens a socket or records anything, so an
// Early dropped unused (the call ran cold) leaves nothing behind.
type Early struct {
	key    earlyKey
	p      *policy.Policy
	file   string
	err    error
	unused bool
}

// earlyKey is every input LoadPolicy reads: an Early stands for the policy
// of a Build whose configuration gives the same.
type earlyKey struct {
	dir, workdir, file, home, trusted, written string
}

func earlyKeyOf(cfg Config, workdir string) earlyKey {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	k := earlyKey{dir: cfg.Dir, workdir: workdir, file: cfg.PolicyFile, home: getenv("HOME")}
	k.trusted, _ = TrustedPath(getenv)
	k.written, _ = BoxWritableRecordPath(getenv)
	return k
}

// ReadEarly reads what Build of cfg will read first: the working directory
// and the policy, with its trust checks. Its errors are kept for Build to
// return, as it would have.
func ReadEarly(cfg Config) *Early {
	workdir, err := Workdir(cfg.Dir, cfg.Workdir)
	if err != nil {
		return &Early{} // Build fails on its own before the policy
	}
	e := &Early{key: earlyKeyOf(cfg, workdir), unused: true}
	e.p, e.file, e.err = LoadPolicy(cfg.Dir, workdir, cfg.PolicyFile, cfg.Getenv)
	return e
}

// loadPolicy is LoadPolicy for cfg: what e read when it was read for the
// same inputs, else read now. An Early is used once (Build consumes it).
func (e *Early) loadPolicy(cfg Config, workdir string) (*policy.Policy, string, error) {
	if e != nil && e.unused && e.key == earlyKeyOf(cfg, workdir) {
		e.unused = false
		return e.p, e.file, e.err
	}
	return LoadPolicy(cfg.Dir, workdir, cfg.PolicyFile, cfg.Getenv)
}
