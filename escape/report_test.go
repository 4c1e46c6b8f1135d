package escape

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestTableGolden pins the selftest table's layout: the columns, the notes
// (each mechanism's reason once, then what is not held) and the totals.
func TestTableGolden(t *testing.T) {
	rep := &Report{
		Platform: "linux/amd64",
		Mechanisms: []MechanismStatus{
			{Mechanism: Mechanisms[0], Status: StatusRun},
			{Mechanism: Mechanisms[1], Status: StatusRun},
			{Mechanism: Mechanisms[2], Status: StatusUntested, Reason: "runsc is not installed"},
		},
		Baselines: []Baseline{
			{Attempt: "read-absolute", Reached: true},
			{Attempt: "egress-metadata", Detail: "nothing answered"},
		},
		Results: []Result{
			{Attempt: "read-absolute", Class: "fs-read", Mechanism: "none", Outcome: Open, Detail: "got the token"},
			{Attempt: "read-absolute", Class: "fs-read", Mechanism: "bubblewrap", Outcome: Held, Detail: "no such file or directory"},
			{Attempt: "read-absolute", Class: "fs-read", Mechanism: "gvisor", Outcome: Untested, Detail: "runsc is not installed"},
			{Attempt: "egress-metadata", Class: "egress", Mechanism: "none", Outcome: Untested, Detail: "unconfined, it did not reach its target either: nothing answered"},
			{Attempt: "egress-metadata", Class: "egress", Mechanism: "bubblewrap", Outcome: Escaped, Detail: "got the token"},
			{Attempt: "egress-metadata", Class: "egress", Mechanism: "gvisor", Outcome: Untested, Detail: "runsc is not installed"},
		},
	}
	rep.count()
	if rep.Escapes != 1 || rep.Failures != 0 {
		t.Errorf("count: got %d escapes and %d failures, want 1 and 0", rep.Escapes, rep.Failures)
	}
	var buf bytes.Buffer
	rep.Table(&buf)
	const golden = "testdata/table.golden"
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), buf.String()); d != "" {
		t.Errorf("table differs from %s (-want +got):\n%s", golden, d)
	}
}
