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

// TestFaults: a phase that touches memory never touched before counts the
// page faults it took, and phases of one name sum them.
func TestFaults(t *testing.T) {
	on, countFaults, phases = true, true, nil
	defer func() { on, countFaults, phases = false, false, nil }()
	const pages = 64
	for range 2 {
		end := Begin("touch")
		b := make([]byte, pages<<12) // fresh pages from the kernel
		for i := 0; i < len(b); i += 1 << 12 {
			b[i] = 1
		}
		end()
	}
	got := merged(phases)
	if len(got) != 1 || got[0].N != 2 {
		t.Fatalf("got phases %+v, want one phase run twice", got)
	}
	if got[0].Faults < pages {
		t.Errorf("faults: got %d, want at least %d (the pages touched)", got[0].Faults, pages)
	}
}
