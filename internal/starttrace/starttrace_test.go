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

// TestJSON: the line is what encoding/json would write of the trace, so
// whatever reads it with encoding/json reads the same values.
func TestJSON(t *testing.T) {
	for _, tr := range []Trace{
		{},
		{Phases: []Phase{}, Total: 1e21},
		{Phases: []Phase{{Name: "go-start", Start: 0, MS: 2.681, N: 1}, {Name: "pin", Start: 3.5, MS: 0.000_000_5, N: 2, Faults: 17}}, Total: 12.345},
		{Phases: []Phase{{Name: `a"b\c<d>&e` + "\x01\u00e9\u2028", Start: -1.5, MS: 1e-7, N: -3, Faults: -1}}, Total: 123456789.125},
	} {
		want, err := json.Marshal(tr)
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.appendJSON(nil); string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// TestMainTwice: a second Main times what ran since the first as go-init.
func TestMainTwice(t *testing.T) {
	on, phases, mainAt = true, nil, time.Time{}
	defer func() { on, phases, mainAt = false, nil, time.Time{} }()
	Main()
	time.Sleep(2 * time.Millisecond)
	Main()
	got := merged(phases)
	if len(got) != 2 || got[0].Name != "go-start" || got[1].Name != "go-init" || got[1].MS < 2 {
		t.Errorf("got %+v, want go-start then go-init of at least 2 ms", got)
	}
}
