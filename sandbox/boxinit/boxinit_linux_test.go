package boxinit

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/sandbox/boxconf"
	"github.com/airlock-run/airlock/sandbox/landlock"
)

// configFD hands run a configuration the way bubblewrap does: a pipe.
func configFD(t *testing.T, cfg boxconf.Config) int {
	t.Helper()
	if cfg.Proto == "" {
		cfg.Proto = boxconf.Fingerprint()
	}
	data, _ := json.Marshal(cfg)
	return pipeFD(t, data)
}

// pipeFD is a descriptor of a pipe that yields data, then its end.
func pipeFD(t *testing.T, data []byte) int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { // data may be more than a pipe holds
		w.Write(data)
		w.Close()
	}()
	t.Cleanup(func() { r.Close() })
	fd, err := dupFD(r)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestRunRefusesASwappedBind: a bind whose inode is not the one the host
// pinned stops the run before anything starts.
func TestRunRefusesASwappedBind(t *testing.T) {
	var st = statOf(t, "/")
	tests := []struct {
		name string
		pins []boxconf.Pin
		want string
	}{
		{"other inode", []boxconf.Pin{{Path: "/", Dev: st.dev, Ino: st.ino + 1}}, "not the file airlock pinned"},
		{"other device", []boxconf.Pin{{Path: "/", Dev: st.dev + 1, Ino: st.ino}}, "not the file airlock pinned"},
		{"gone", []boxconf.Pin{{Path: "/no/such/bind", Dev: 1, Ino: 1}}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(configFD(t, boxconf.Config{Argv: []string{"/bin/true"}, Pins: tt.pins}), nil)
			if got.Started || !strings.Contains(got.Error, tt.want) {
				t.Errorf("got %+v, want nothing started and an error containing %q", got, tt.want)
			}
		})
	}
}

// TestRunRefusesAnotherProtocol: a configuration planned by another build
// (another Fingerprint) starts nothing.
func TestRunRefusesAnotherProtocol(t *testing.T) {
	got := run(configFD(t, boxconf.Config{Argv: []string{"/bin/true"}, Proto: "0123"}), nil)
	if got.Started || !strings.Contains(got.Error, "of another build") {
		t.Errorf("got %+v, want nothing started and the protocol named", got)
	}
}

func TestParseFlags(t *testing.T) {
	if _, _, err := parseFlags([]string{boxconf.FlagConfig, "3"}); err == nil {
		t.Error("parseFlags without the status descriptor succeeded")
	}
	if _, _, err := parseFlags([]string{boxconf.FlagConfig, "1", boxconf.FlagStatus, "4"}); err == nil {
		t.Error("parseFlags took descriptor 1 for the config")
	}
	c, s, err := parseFlags([]string{boxconf.FlagConfig, "5", boxconf.FlagStatus, "6"})
	if err != nil || c != 5 || s != 6 {
		t.Errorf("parseFlags = %d, %d, %v; want 5, 6, nil", c, s, err)
	}
}

func FuzzParseFlags(f *testing.F) {
	f.Add("--config-fd", "3", "--status-fd", "4")
	f.Add("--status-fd", "-1", "x", "")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		parseFlags([]string{a, b, c, d})
	})
}

// TestRunFailsWhenTheWallCannotBeApplied: a wall the kernel refuses ends
// the run with the reason before anything starts; it is never dropped.
func TestRunFailsWhenTheWallCannotBeApplied(t *testing.T) {
	if abi, err := landlock.ABI(); err != nil || abi < 1 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs Landlock (ABI %d, %v)", abi, err)
		}
		t.Skip("needs Landlock")
	}
	cfg := boxconf.Config{Argv: []string{"/bin/true"}, Walls: &boxconf.Walls{Exec: &boxconf.Exec{Paths: []string{"/bin/true"}, Hide: []string{"not/absolute"}}}}
	abi, _ := landlock.ABI()
	cfg.Walls.Access = boxconf.AccessWord(landlock.Handled(landlock.Rules{ExecWall: true, Hide: cfg.Walls.Exec.Hide}, abi))
	done := make(chan boxconf.Status)
	// run locks its thread and sets no_new_privs on it; the goroutine
	// ends locked, so the thread goes with it.
	go func() { done <- run(configFD(t, cfg), nil) }()
	got := <-done
	if got.Started || !strings.Contains(got.Error, "landlock walls: landlock: hide not/absolute") {
		t.Errorf("got %+v, want nothing started and the wall's error", got)
	}
}
