package wiring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// privateWorld is a caller whose every state path lies under one root, and
// a working directory beside it.
func privateWorld(t testing.TB) (root, work string, getenv func(string) string) {
	root = t.TempDir()
	work = filepath.Join(root, "work")
	env := map[string]string{
		"HOME": filepath.Join(root, "home"), "XDG_STATE_HOME": filepath.Join(root, "state"),
		"XDG_CONFIG_HOME": filepath.Join(root, "config"), "XDG_RUNTIME_DIR": filepath.Join(root, "run"),
	}
	for _, d := range []string{work, env["XDG_RUNTIME_DIR"]} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return root, work, func(k string) string { return env[k] }
}

func TestPrivateListsEveryHostWrite(t *testing.T) {
	root, work, getenv := privateWorld(t)
	cfg := Config{Dir: work, Getenv: getenv, TraceFile: "trace.json", ReportFile: filepath.Join(root, "r.json"),
		StoreDir: filepath.Join(root, "files")}
	got, err := Private(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(root, "config", "airlock", "grants.yaml"),
		filepath.Join(root, "state", "airlock", "audit.jsonl"),
		filepath.Join(root, "run", "airlock"),
		filepath.Join(work, "trace.json"),
		filepath.Join(root, "r.json"),
		filepath.Join(root, "files"),
		filepath.Join(root, "config", "airlock", "trusted.yaml"),
		filepath.Join(root, "state", "airlock", "box-writable"),
		filepath.Join(root, "state", "airlock", ProbeCacheFile),
		filepath.Join(root, "state", "airlock", EtcViewDir),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Private (-want +got):\n%s", d)
	}
	cfg.TraceFile = filepath.Join(root, "trace.json") // outside the workdir, so Build goes on
	k, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	want[3] = cfg.TraceFile
	if d := cmp.Diff(want, k.Private); d != "" {
		t.Errorf("the kernel's Private list (-want +got):\n%s", d)
	}
}

// TestBuildRefusesPolicyReachingPrivate: a policy whose fs.write reaches
// any of airlock's own paths is refused in fix mode before anything is
// opened or run, with the mediator's message; the trace and report files
// are refused in observe mode too.
func TestBuildRefusesPolicyReachingPrivate(t *testing.T) {
	tests := []struct {
		name    string
		grant   func(root string) string // the fs.write entry
		cfg     func(root string, c *Config)
		observe bool // also refused in observe mode
	}{
		{"grants file", func(r string) string { return filepath.Join(r, "config") }, nil, false},
		{"audit log", func(r string) string { return filepath.Join(r, "state") }, nil, false},
		{"approvals socket", func(r string) string { return filepath.Join(r, "run") }, nil, false},
		{"file store", func(r string) string { return filepath.Join(r, "data") },
			func(r string, c *Config) { c.StoreDir = filepath.Join(r, "data", "files") }, false},
		{"trace file", func(r string) string { return filepath.Join(r, "t") },
			func(r string, c *Config) { c.TraceFile = filepath.Join(r, "t", "trace.json") }, true},
		{"report file", func(r string) string { return "." },
			func(r string, c *Config) { c.ReportFile = filepath.Join(c.Dir, "r.json") }, true},
		{"mcp pins", func(r string) string { return filepath.Join(r, "pins") },
			func(r string, c *Config) { c.PinsDir = filepath.Join(r, "pins", "mcp-pins") }, true},
		{"everything", func(r string) string { return "/" }, nil, false},
		{"inside the store", func(r string) string { return filepath.Join(r, "data", "files", "blobs") },
			func(r string, c *Config) { c.StoreDir = filepath.Join(r, "data", "files") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, work, getenv := privateWorld(t)
			grant := tt.grant(root)
			if filepath.IsAbs(grant) {
				if err := os.MkdirAll(grant, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte("fs: {read: [.], write: ["+grant+"]}\n"), 0o644)
			// Trusted, so what refuses it is the private-state check (a
			// policy granting "/" lies in its own grant: untrusted, it is
			// refused as a box's).
			list, _ := TrustedPath(getenv)
			if _, err := Trust(list, work, "airlock.yaml", time.Now()); err != nil {
				t.Fatal(err)
			}
			for _, mode := range []string{"fix", "observe"} {
				cfg := Config{Dir: work, Getenv: getenv, Mode: mode}
				if tt.cfg != nil {
					tt.cfg(root, &cfg)
				}
				k, err := Build(cfg)
				refused := mode == "fix" || tt.observe
				if !refused {
					if err != nil {
						t.Errorf("%s: %v; want it built", mode, err)
					} else {
						k.Close()
					}
					continue
				}
				if err == nil {
					k.Close()
					t.Fatalf("%s: built; want a refusal", mode)
				}
				if !strings.Contains(err.Error(), "holds airlock's own") && !strings.Contains(err.Error(), "lies inside airlock's own") {
					t.Errorf("%s: got %v; want the private-state refusal", mode, err)
				}
				if _, serr := os.Stat(filepath.Join(root, "state", "airlock", "audit.jsonl")); serr == nil {
					t.Errorf("%s: the audit log was opened before the refusal", mode)
				}
			}
		})
	}
}
