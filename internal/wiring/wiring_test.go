package wiring

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mediator"
)

func TestLoadPolicy(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name      string
		files     map[string]string
		file      string
		wantFile  string // "" means the built-in profile
		wantClass errs.Class
		wantErr   string
	}{
		{name: "no file: the workspace profile"},
		{name: "airlock.yaml in the workdir", files: map[string]string{"airlock.yaml": "shell: {allow: [ls]}\n"}, wantFile: "airlock.yaml"},
		{name: "named file", files: map[string]string{"p.yaml": "shell: {allow: [ls]}\n"}, file: "p.yaml", wantFile: "p.yaml"},
		{name: "named file missing never falls back", file: "missing.yaml", wantClass: errs.Invalid, wantErr: "missing.yaml"},
		{name: "invalid policy", files: map[string]string{"airlock.yaml": "shel: {}\n"}, wantClass: errs.Invalid, wantErr: "airlock.yaml:1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p, file, err := LoadPolicy(work, work, tt.file, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errs.ClassOf(err) != tt.wantClass {
					t.Fatalf("got error %v (class %v), want %v containing %q", err, errs.ClassOf(err), tt.wantClass, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := filepath.Base(file); tt.wantFile != "" && got != tt.wantFile || tt.wantFile == "" && file != "" {
				t.Errorf("got policy file %q, want %q", file, tt.wantFile)
			}
			if tt.wantFile == "" && (len(p.FS.Read) != 1 || len(p.Net.Allow) != 0) {
				t.Errorf("built-in profile = %+v, want the workdir readable and no network", p)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	state := t.TempDir()
	env := map[string]string{
		"HOME": filepath.Join(state, "home"), "XDG_STATE_HOME": filepath.Join(state, "state"),
		"XDG_CONFIG_HOME": filepath.Join(state, "config"), "XDG_RUNTIME_DIR": filepath.Join(state, "run"),
	}
	if err := os.MkdirAll(env["XDG_RUNTIME_DIR"], 0o700); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return env[k] }
	work := t.TempDir()

	if _, err := Build(Config{Dir: work, Workdir: "nope", Getenv: getenv}); err == nil || errs.ClassOf(err) != errs.Invalid {
		t.Errorf("a missing workdir: got %v, want an invalid error", err)
	}
	if _, err := Build(Config{Dir: work, Mode: "repair", Getenv: getenv}); err == nil || !strings.Contains(err.Error(), "--mode") {
		t.Errorf("a bad mode: got %v, want an error naming --mode", err)
	}
	os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte("fs: {write: []}\n"), 0o644)
	if _, err := Build(Config{Dir: work, Mode: "fix", Getenv: getenv}); err == nil || !strings.Contains(err.Error(), "fs.write") {
		t.Errorf("fix mode without writes: got %v, want an error naming fs.write", err)
	}
	os.Remove(filepath.Join(work, "airlock.yaml"))

	k, err := Build(Config{Dir: work, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Decide(context.Background(), mediator.Call{Kind: mediator.KindExec, Argv: []string{"ls"}}); err != nil {
		t.Errorf("ls under the workspace profile: %v", err)
	}
	if _, err := k.Decide(context.Background(), mediator.Call{Kind: mediator.KindNet, Host: "example.com", Port: 443}); err == nil {
		t.Error("the workspace profile allowed a connection")
	}
	k.Close()
	b, err := os.ReadFile(filepath.Join(env["XDG_STATE_HOME"], "airlock", "audit.jsonl"))
	if err != nil || strings.Count(string(b), "\n") != 2 {
		t.Errorf("audit log after two decisions: %d lines, err %v; want 2", strings.Count(string(b), "\n"), err)
	}
}

func TestGrantsFileNonsenseStopsEverything(t *testing.T) {
	state := t.TempDir()
	cfg := filepath.Join(state, "config")
	os.MkdirAll(filepath.Join(cfg, "airlock"), 0o700)
	os.WriteFile(filepath.Join(cfg, "airlock", "grants.yaml"), []byte("grants: [ {kind: argv, argv: 7} ]\n"), 0o600)
	env := map[string]string{"HOME": state, "XDG_CONFIG_HOME": cfg, "XDG_STATE_HOME": filepath.Join(state, "s")}
	_, err := Build(Config{Dir: t.TempDir(), Getenv: func(k string) string { return env[k] }})
	if err == nil || !strings.Contains(err.Error(), "grants.yaml:1") {
		t.Errorf("got %v, want an error naming grants.yaml:1", err)
	}
}
