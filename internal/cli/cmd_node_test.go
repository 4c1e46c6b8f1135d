package cli

import (
	"testing"

	"github.com/airlock-run/airlock/escape"
	"github.com/airlock-run/airlock/jobs/pki"
)

// TestAttestRowsAreAttempts: every row a node attests with is an attempt
// of the escape matrix on this platform, so a report can hold it.
func TestAttestRowsAreAttempts(t *testing.T) {
	ids := escape.AttemptIDs()
	cases, err := escape.Parse(escape.CaseFile)
	if err != nil {
		t.Fatal(err)
	}
	inFile := map[string]bool{}
	for _, a := range cases.Attempts {
		inFile[a.ID] = true
	}
	for _, r := range pki.AttestRows {
		if _, ok := ids[r]; !ok || !inFile[r] {
			t.Errorf("attest row %q is not an attempt of the escape matrix here (code %v, case file %v)", r, ok, inFile[r])
		}
	}
}
