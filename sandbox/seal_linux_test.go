package sandbox

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox/landlock"
)

// bwrapArgs plans spec and returns bubblewrap's options as the box's
// descriptor carries them.
func bwrapArgs(t *testing.T, spec Spec) []string {
	t.Helper()
	box, err := Plan(spec, Tier1, "/proc/self/exe")
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	defer box.Close()
	i := slices.Index(box.Argv, "--args")
	n, _ := strconv.Atoi(box.Argv[i+1])
	data, err := io.ReadAll(box.ExtraFiles[n-3])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// TestPlanSeal: a walled box that may not run what it writes gets the two
// capabilities the seal needs, no --disable-userns (its nested user
// namespace would not own the mounts) and, without an init, no
// bubblewrap-loaded filter (the exec step loads it after the seal); with
// shell.run_written, or without a list, the box is as it was.
func TestPlanSeal(t *testing.T) {
	if Probe().Tier() < Tier1 {
		testsupport.Missing(t, "tier 1 unavailable")
	}
	if abi, _ := landlock.ABI(); abi < 1 {
		testsupport.Missing(t, "no Landlock")
	}
	base := Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	tests := []struct {
		name   string
		exec   *ExecSpec
		sealed bool
	}{
		{"no list", nil, false},
		{"run_written", &ExecSpec{Programs: []string{"sh"}, RunWritten: true}, false},
		{"sealed", &ExecSpec{Programs: []string{"sh"}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := base
			spec.Exec = tc.exec
			args := bwrapArgs(t, spec)
			if got := slices.Contains(args, "--cap-add"); got != tc.sealed {
				t.Errorf("--cap-add present = %v, want %v: %q", got, tc.sealed, args)
			}
			if got := slices.Contains(args, "--seccomp"); got == tc.sealed {
				t.Errorf("--seccomp present = %v, want %v", got, !tc.sealed)
			}
			if tc.sealed && slices.Contains(args, "--disable-userns") {
				t.Errorf("--disable-userns with the seal: %q", args)
			}
		})
	}
}
