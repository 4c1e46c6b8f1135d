package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/wiring"
)

// TestPrivateState: with a write grant that reaches airlock's own grants
// file, write_file must not replace it — an agent could grant itself
// "allow always" for the next run. The kernel refuses such a policy before
// it serves anything, as `airlock run` does, and every file tool and exec
// would meet the same check of airlock's private paths at each call.
func TestPrivateState(t *testing.T) {
	root := t.TempDir()
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	grants := filepath.Join(home, ".config", "airlock", "grants.yaml")
	for _, d := range []string{work, filepath.Dir(grants)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte("fs:\n  read: [., \"~\"]\n  write: [., \"~\"]\n"), 0o644)
	// Unconfined, the write is one call away.
	if err := os.WriteFile(grants, []byte("planted"), 0o600); err != nil {
		t.Fatalf("naive write: %v; the attack should work unconfined", err)
	}
	const orig = "grants: []\n"
	os.WriteFile(grants, []byte(orig), 0o600)
	env := map[string]string{"HOME": home, "XDG_STATE_HOME": filepath.Join(root, "state"),
		"XDG_RUNTIME_DIR": filepath.Join(root, "run")}
	k, err := wiring.Build(wiring.Config{Workdir: work, Dir: work, Mode: "fix", Getenv: func(k string) string { return env[k] },
		GrantsFile: grants, Exe: airlockBin(t)})
	if err == nil {
		k.Close()
		t.Fatal("the kernel was built; want the policy refused for reaching airlock's grants file")
	}
	if !strings.Contains(err.Error(), "airlock's own") {
		t.Errorf("got %v; want the reason to name airlock's own files", err)
	}
	if b, _ := os.ReadFile(grants); string(b) != orig {
		t.Errorf("the grants file was changed to %q", b)
	}
}
