package sandbox

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
// PATH, never airlock's), resolving relative entries against dir. It is
// shared by the runner (tier 0, on the host) and the in-box init.
func LookPath(name, pathEnv, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", &NotFoundError{name, "(" + err.Error() + ")"}
		}
		return p, nil
	}
	if pathEnv == "" {
		pathEnv = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", &NotFoundError{name, "on PATH " + pathEnv}
}

func executable(p string) error {
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
