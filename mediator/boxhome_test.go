package mediator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// TestCacheEnv: a cache the policy grants by name (or inside a write grant
// in fix mode) is named to the box by its tool's variable; a wider read
// grant, an observe-mode write grant and a variable the policy sets itself
// leave it alone.
func TestCacheEnv(t *testing.T) {
	home := t.TempDir()
	for _, c := range sandbox.ToolCaches {
		os.MkdirAll(filepath.Join(home, c.Rel), 0o755)
	}
	cases := []struct {
		name string
		doc  string
		mode policy.Mode
		want map[string]string // variable → path below home ("" absent)
	}{
		{"read grants by name", "fs:\n  read: [\"~/.cache/go-build\", \"~/go/pkg/mod\", \"~/.cache/pip\", \"~/.npm\", \"~/.cargo\"]\n", policy.Observe,
			map[string]string{"GOCACHE": ".cache/go-build", "GOMODCACHE": "go/pkg/mod", "PIP_CACHE_DIR": ".cache/pip", "npm_config_cache": ".npm", "CARGO_HOME": ".cargo"}},
		{"a wider read grant sets nothing", "fs:\n  read: [\"~\"]\n", policy.Fix,
			map[string]string{"GOCACHE": "", "CARGO_HOME": ""}},
		{"inside a write grant in fix mode", "fs:\n  write: [\"~/.cache\"]\n", policy.Fix,
			map[string]string{"GOCACHE": ".cache/go-build", "PIP_CACHE_DIR": ".cache/pip", "npm_config_cache": ""}},
		{"a write grant in observe mode", "fs:\n  write: [\"~/.cache\"]\n", policy.Observe,
			map[string]string{"GOCACHE": ""}},
		{"the policy's own value wins", "fs:\n  read: [\"~/.cache/go-build\"]\nenv:\n  set: {GOCACHE: /elsewhere}\n", policy.Observe,
			map[string]string{"GOCACHE": "/elsewhere"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := policy.Parse("p.yaml", []byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			w := policy.World{Workdir: t.TempDir(), Home: home, Mode: c.mode}
			env := map[string]string{}
			for _, kv := range boxEnv(p, w, nil) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			for k, rel := range c.want {
				want := rel
				if rel != "" && !filepath.IsAbs(rel) {
					want = filepath.Join(home, rel)
				}
				if got := env[k]; got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestKeptHome: the kept home is one directory per working directory,
// private to its owner, under the state directory.
func TestKeptHome(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	a, b := t.TempDir(), t.TempDir()
	ha, err := keptHome(policy.World{Workdir: a})
	if err != nil {
		t.Fatal(err)
	}
	ha2, _ := keptHome(policy.World{Workdir: a})
	hb, _ := keptHome(policy.World{Workdir: b})
	if ha != ha2 || ha == hb {
		t.Errorf("homes: %s, %s for the same directory and %s for another; want one per directory", ha, ha2, hb)
	}
	if !strings.HasPrefix(ha, filepath.Join(state, "airlock", "homes")+"/") {
		t.Errorf("home %s is not under the state directory %s", ha, state)
	}
	if fi, err := os.Stat(ha); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("home %s: %v, mode %v; want a 0700 directory", ha, err, fi.Mode())
	}
}
