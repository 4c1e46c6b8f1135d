package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestGuardWaitsForTheRunner: a killed runner's files are released in no
// set order, so the guard's input can end while the runner's shared flock
// on a stub still holds. A stand-in runner closes the guard's input first
// and keeps its flock a while longer; the guard must still remove the stub
// (without Runner, as before, it found the stub shared and left it in the
// tree for good).
func TestGuardWaitsForTheRunner(t *testing.T) {
	testsupport.Require(t, testsupport.Program("flock"), testsupport.Program("sh"))
	for _, tc := range []struct {
		name       string
		withRunner bool
		removed    bool
	}{
		{"the runner named", true, true},
		{"no runner named (the shape before)", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			stub := filepath.Join(dir, ".mcp.json")
			if err := os.WriteFile(stub, nil, stubMode); err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			if err := unix.Stat(stub, &st); err != nil {
				t.Fatal(err)
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// fd 3 is the guard's input: closed while fd 4's shared flock
			// on the stub still holds, as a killed runner may.
			held := filepath.Join(dir, "held")
			runner := exec.Command("sh", "-c", `exec 4<"$1"; flock -s 4; : > "$2"; sleep 0.2; exec 3>&-; sleep 0.6`, "sh", stub, held)
			runner.ExtraFiles = []*os.File{w}
			if err := runner.Start(); err != nil {
				t.Fatal(err)
			}
			defer runner.Wait()
			cfg := GuardConfig{Stubs: []Stub{{Path: stub, Dev: uint64(st.Dev), Ino: st.Ino}}}
			if tc.withRunner {
				cfg.Runner = runner.Process.Pid
			}
			line, _ := json.Marshal(cfg)
			if _, err := w.Write(append(line, '\n')); err != nil {
				t.Fatal(err)
			}
			w.Close() // the runner's copy is the last
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if _, err := os.Stat(held); err == nil {
					break
				}
				if time.Now().After(end) {
					t.Fatal("the stand-in runner never took its flock")
				}
			}
			Guard(r)
			_, err = os.Lstat(stub)
			if gone := os.IsNotExist(err); gone != tc.removed {
				t.Errorf("stub removed: %v, want %v (lstat: %v)", gone, tc.removed, err)
			}
		})
	}
}
