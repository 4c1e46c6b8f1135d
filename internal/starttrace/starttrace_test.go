package starttrace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestWrite: phases of one name are summed and counted, in the order each
// first ran, and the line parses back as the Trace it printed.
func TestWrite(t *testing.T) {
	on, phases = true, nil
	defer func() { on, phases = false, nil }()
	Main()
	Begin("pin")()
	Begin("plan")()
	Begin("pin")()
	var b bytes.Buffer
	Write(&b)
	line, ok := strings.CutPrefix(strings.TrimSuffix(b.String(), "\n"), Prefix)
	if !ok {
		t.Fatalf("got %q, want a line starting %q", b.String(), Prefix)
	}
	var tr Trace
	if err := json.Unmarshal([]byte(line), &tr); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range tr.Phases {
		got = append(got, p.Name+":"+string(rune('0'+p.N)))
	}
	if strings.Join(got, " ") != "go-start:1 pin:2 plan:1" {
		t.Errorf("phases: got %v, want go-start:1 pin:2 plan:1", got)
	}
}

// TestOff: with the variable unset nothing is kept or printed.
func TestOff(t *testing.T) {
	on, phases = false, nil
	Begin("x")()
	Since("y", time.Now())
	var b bytes.Buffer
	Write(&b)
	if b.Len() != 0 || len(phases) != 0 {
		t.Errorf("off: printed %q, kept %d phases; want nothing", b.String(), len(phases))
	}
}
