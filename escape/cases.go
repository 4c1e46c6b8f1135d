// Package escape is airlock's escape matrix: every boundary of the box
// attacked by a real program run inside it, against a real target set up
// outside, on every sandbox mechanism airlock can report.
//
// Each attempt runs unconfined first and must reach its target there;
// otherwise it is "untested" on that machine, never "held". The case file
// (escape/testdata/escape-cases.json, built into the binary as CaseFile)
// holds a row for every mechanism and platform and an entry for every
// attempt; Parse checks it strictly.
//
// It sits above runner and sandbox: it plans real boxes and runs the attacks
// in them through the runner, and it starts the unconfined attempts itself
// (the one process starter besides runner and the in-box init, because an
// attack must first be seen to work outside any box). The attacks
// themselves are this package's hidden mode (AttackArg), run as the airlock
// binary inside the box. Only internal/cli (`airlock sandbox selftest`) and
// cmd/airlock (which dispatches AttackArg) import it; `go test ./escape/`
// runs the matrix.
package escape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-run/airlock/errs"
)

// AttackArg is the hidden first argument that makes the airlock binary the
// matrix's attack tool.
const AttackArg = "__airlock-escape-attack"

// Mechanism is a way of confining a box that airlock can report.
type Mechanism struct {
	Name string `json:"name"`
	Tier int    `json:"tier"`
	// Confines is false for tier 0, which promises no containment: an
	// attempt that reaches its target there is "open", not an escape.
	Confines bool `json:"confines"`
}

// Mechanisms are every mechanism airlock can report, as runner.Description
// names them.
var Mechanisms = []Mechanism{
	{Name: "none", Tier: 0},
	{Name: "bubblewrap", Tier: 1, Confines: true},
	{Name: "gvisor", Tier: 2, Confines: true},
}

// Platforms are the GOOS/GOARCH pairs airlock ships for.
var Platforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

// Row statuses.
const (
	// StatusRun: the matrix runs the mechanism on the platform, where the
	// host has it.
	StatusRun = "run"
	// StatusUnsupported: airlock does not offer the mechanism there.
	StatusUnsupported = "unsupported"
	// StatusUntested: airlock can report the mechanism there but the
	// matrix cannot run it yet; Reason says why.
	StatusUntested = "untested"
)

// Row is one mechanism on one platform.
type Row struct {
	ID        string `json:"id"`
	Mechanism string `json:"mechanism"`
	Platform  string `json:"platform"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
}

// Attempt is one entry of the case file: what is attempted, in words.
type Attempt struct {
	ID    string `json:"id"`
	Class string `json:"class"`
	What  string `json:"what"`
}

// Cases is the parsed case file.
type Cases struct {
	Rows     []Row     `json:"rows"`
	Attempts []Attempt `json:"attempts"`
}

// Classes are the attempt classes a case may name.
var Classes = []string{"fs-read", "fs-write", "net", "egress", "process", "kernel", "seccomp", "limits"}

// Parse reads and checks a case file: no unknown or missing field, no
// unknown mechanism, platform, status or class, no duplicate id, and a row
// for every mechanism on every platform. Errors name the row.
func Parse(data []byte) (*Cases, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Cases
	if err := dec.Decode(&c); err != nil {
		return nil, errs.Invalidf("escape cases: %v", err)
	}
	if dec.More() {
		return nil, errs.Invalidf("escape cases: text after the JSON object")
	}
	ids := map[string]string{}
	pairs := map[string]string{}
	for i, r := range c.Rows {
		where := fmt.Sprintf("rows[%d] (id %q)", i, r.ID)
		for _, f := range []struct{ name, v string }{{"id", r.ID}, {"mechanism", r.Mechanism}, {"platform", r.Platform}, {"status", r.Status}, {"reason", r.Reason}} {
			if strings.TrimSpace(f.v) == "" {
				return nil, errs.Invalidf("escape cases: %s: missing field %q", where, f.name)
			}
		}
		if prev, dup := ids[r.ID]; dup {
			return nil, errs.Invalidf("escape cases: %s: duplicate id (also %s)", where, prev)
		}
		ids[r.ID] = fmt.Sprintf("rows[%d]", i)
		if _, ok := MechanismNamed(r.Mechanism); !ok {
			return nil, errs.Invalidf("escape cases: %s: unknown mechanism %q (known: %s)", where, r.Mechanism, strings.Join(mechanismNames(), ", "))
		}
		if !contains(Platforms, r.Platform) {
			return nil, errs.Invalidf("escape cases: %s: unknown platform %q (known: %s)", where, r.Platform, strings.Join(Platforms, ", "))
		}
		if !contains([]string{StatusRun, StatusUnsupported, StatusUntested}, r.Status) {
			return nil, errs.Invalidf("escape cases: %s: unknown status %q (want run, unsupported or untested)", where, r.Status)
		}
		key := r.Mechanism + " on " + r.Platform
		if prev, dup := pairs[key]; dup {
			return nil, errs.Invalidf("escape cases: %s: a second row for %s (first: %s)", where, key, prev)
		}
		pairs[key] = where
	}
	for _, m := range Mechanisms {
		for _, p := range Platforms {
			if _, ok := pairs[m.Name+" on "+p]; !ok {
				return nil, errs.Invalidf("escape cases: no row for mechanism %q on platform %s", m.Name, p)
			}
		}
	}
	for i, a := range c.Attempts {
		where := fmt.Sprintf("attempts[%d] (id %q)", i, a.ID)
		for _, f := range []struct{ name, v string }{{"id", a.ID}, {"class", a.Class}, {"what", a.What}} {
			if strings.TrimSpace(f.v) == "" {
				return nil, errs.Invalidf("escape cases: %s: missing field %q", where, f.name)
			}
		}
		if prev, dup := ids[a.ID]; dup {
			return nil, errs.Invalidf("escape cases: %s: duplicate id (also %s)", where, prev)
		}
		ids[a.ID] = fmt.Sprintf("attempts[%d]", i)
		if !contains(Classes, a.Class) {
			return nil, errs.Invalidf("escape cases: %s: unknown class %q (known: %s)", where, a.Class, strings.Join(Classes, ", "))
		}
	}
	if len(c.Attempts) == 0 {
		return nil, errs.Invalidf("escape cases: no attempts")
	}
	return &c, nil
}

// MechanismNamed returns the mechanism called name.
func MechanismNamed(name string) (Mechanism, bool) {
	for _, m := range Mechanisms {
		if m.Name == name {
			return m, true
		}
	}
	return Mechanism{}, false
}

// Row returns the row of mechanism on platform.
func (c *Cases) Row(mechanism, platform string) (Row, bool) {
	for _, r := range c.Rows {
		if r.Mechanism == mechanism && r.Platform == platform {
			return r, true
		}
	}
	return Row{}, false
}

func mechanismNames() []string {
	var out []string
	for _, m := range Mechanisms {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
