package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// airlockBin returns the binary under test: $AIRLOCK_BIN, or one built from
// this checkout once per test run (testsupport.AirlockBin).
func airlockBin(t testing.TB) string {
	return testsupport.AirlockBin(t)
}

// home is a user's world for one test: a working directory and the XDG
// directories airlock keeps its state in.
type home struct {
	t       testing.TB
	bin     string
	Work    string
	State   string
	environ []string
}

func newHome(t testing.TB) *home {
	t.Helper()
	root := t.TempDir()
	h := &home{t: t, bin: airlockBin(t), Work: filepath.Join(root, "work"), State: root}
	for _, d := range []string{h.Work, filepath.Join(root, "run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.environ = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/go/bin",
		"HOME=" + filepath.Join(root, "home"),
		"XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"),
		"XDG_DATA_HOME=" + filepath.Join(root, "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(root, "run"),
	}
	return h
}

func (h *home) write(name, content string) string {
	h.t.Helper()
	p := filepath.Join(h.Work, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

type result struct {
	Code           int
	Stdout, Stderr string
}

// run runs airlock with args in the working directory, with no terminal and
// empty input, and returns how it ended.
func (h *home) run(args ...string) result {
	h.t.Helper()
	return h.runEnv(h.environ, args...)
}

// runEnv is run with the environment environ.
func (h *home) runEnv(environ []string, args ...string) result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Dir = h.Work
	cmd.Env = append(append([]string(nil), environ...), "AIRLOCK_E2E=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
		if r.Code < 0 {
			h.t.Fatalf("airlock %v was killed: %v\nstderr: %s", args, err, r.Stderr)
		}
	case err != nil:
		h.t.Fatalf("airlock %v: %v", args, err)
	}
	return r
}

func requireRoot(t testing.TB) {
	t.Helper()
	testsupport.Require(t, testsupport.Root) // cgroups and the sandbox's full checks
}

func requireBwrap(t testing.TB) {
	t.Helper()
	testsupport.Require(t, testsupport.Bwrap)
}
