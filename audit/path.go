package audit

import (
	"path/filepath"

	"github.com/airlock-run/airlock/errs"
)

// DefaultPath is where airlock keeps its audit log when none is named:
// $XDG_STATE_HOME/airlock/audit.jsonl, else ~/.local/state/airlock/audit.jsonl.
// getenv reads the caller's environment (the CLI passes Env.Getenv).
func DefaultPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock", "audit.jsonl"), nil
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "airlock", "audit.jsonl"), nil
	}
	return "", errs.Unavailablef("audit: no place for the log: neither XDG_STATE_HOME nor HOME is an absolute path (set one, or name the file)")
}
