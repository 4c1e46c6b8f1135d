// Package lookpath finds the program a command names the way a shell
// would, on the command's own PATH. It is shared by the host planner
// (sandbox, the runner's tier 0) and the in-box init (sandbox/boxinit),
// which must not import the host planner: both judge a name as the same
// file.
package lookpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-run/airlock/errs"
)

// NotFoundError is a command that LookPath could not find.
type NotFoundError struct {
	Name  string
	Where string // "on PATH ..." or the reason a path did not do
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("command %q not found %s", e.Name, e.Where)
}

// ErrClass makes a missing command errs.NotFound (exit 125).
func (e *NotFoundError) ErrClass() errs.Class { return errs.NotFound }

// LookPath finds name the way a shell would, on pathEnv (the command's own
// PATH, never airlock's), resolving relative entries against dir.
func LookPath(name, pathEnv, dir string) (string, error) {
	cands, where := Candidates(name, pathEnv, dir)
	var last error
	for _, p := range cands {
		if last = Executable(p); last == nil {
			return p, nil
		}
	}
	if strings.Contains(name, "/") && last != nil {
		where = "(" + last.Error() + ")"
	}
	return "", &NotFoundError{name, where}
}

// Candidates are the paths name may be, in order, and how to say where
// none of them was.
func Candidates(name, pathEnv, dir string) ([]string, string) {
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return filepath.Clean(p)
	}
	if strings.Contains(name, "/") {
		return []string{abs(name)}, "inside the box"
	}
	if pathEnv == "" {
		pathEnv = "/usr/local/bin:/usr/bin:/bin"
	}
	var out []string
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		out = append(out, abs(filepath.Join(d, name)))
	}
	return out, "on PATH " + pathEnv
}

// Executable says why p is not a file a shell would run, or nil.
func Executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return errors.New("is a directory")
	}
	if st.Mode()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}

// EnvValue returns the value of key in a KEY=VALUE list, the last one
// winning as in a process's environment.
func EnvValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
