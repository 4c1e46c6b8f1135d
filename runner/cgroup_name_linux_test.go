package runner

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestGroupName: a run's group is named by airlock's pid, which the sweep
// of stale groups reads back, and 48 random bits, new for every group.
func TestGroupName(t *testing.T) {
	want := regexp.MustCompile(`^` + strconv.Itoa(os.Getpid()) + `-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		n := groupName()
		if !want.MatchString(n) {
			t.Fatalf("groupName: got %q, want <pid>-<12 hex digits>", n)
		}
		if seen[n] {
			t.Fatalf("groupName: %q given twice", n)
		}
		seen[n] = true
	}
}
