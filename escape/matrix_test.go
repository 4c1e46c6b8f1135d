package escape

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxinit"
)

// TestMain lets the test binary be both the box's init and the attack tool,
// as the airlock binary is for `airlock sandbox selftest`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case boxinit.Arg:
			if len(os.Args) > 2 && os.Args[2] == sandbox.GuardArg {
				os.Exit(sandbox.Guard(os.Stdin)) // as cmd/airlock dispatches it
			}
			os.Exit(boxinit.Main(os.Args[2:]))
		case AttackArg:
			os.Exit(AttackMain(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

var (
	only       = flag.String("escape.only", "", "comma-separated attempt ids to run (default all)")
	reportFile = flag.String("escape.report", "", "write the matrix's JSON report to this file")
)

const caseFile = "testdata/escape-cases.json"

func loadCases(t *testing.T) *Cases {
	t.Helper()
	data, err := os.ReadFile(caseFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", caseFile, err)
	}
	return c
}

// TestCaseFileCoversEveryAttempt: every attempt this platform makes has an
// entry of the same class, and (on linux/amd64, which has every system
// call the filter names) every entry has an attempt.
func TestCaseFileCoversEveryAttempt(t *testing.T) {
	c := loadCases(t)
	file := map[string]string{}
	for _, a := range c.Attempts {
		file[a.ID] = a.Class
	}
	for id, class := range AttemptIDs() {
		if got, ok := file[id]; !ok {
			t.Errorf("attempt %s (%s) has no entry in %s", id, class, caseFile)
		} else if got != class {
			t.Errorf("attempt %s: class %s in the file, %s in the code", id, got, class)
		}
	}
	if runtime.GOOS+"/"+runtime.GOARCH == "linux/amd64" {
		code := AttemptIDs()
		for id := range file {
			if _, ok := code[id]; !ok {
				t.Errorf("%s lists attempt %s, which no code makes", caseFile, id)
			}
		}
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if !contains(Platforms, platform) {
		t.Errorf("this platform %s is not in Platforms", platform)
	}
}

// TestMechanismsMatchTheSandbox: the mechanism names are the ones a plan
// reports, so a new mechanism without a row cannot slip in.
func TestMechanismsMatchTheSandbox(t *testing.T) {
	box, err := sandbox.Plan(sandbox.Spec{Workdir: t.TempDir()}, sandbox.Tier0, "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if m, ok := MechanismNamed(box.Mechanism); !ok || m.Tier != 0 {
		t.Errorf("tier 0 reports mechanism %q, which has no tier-0 entry in Mechanisms", box.Mechanism)
	}
	if sandbox.Probe().Tier() >= sandbox.Tier1 {
		box, err := sandbox.Plan(sandbox.Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}, sandbox.Tier1, testExe(t))
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close()
		if m, ok := MechanismNamed(box.Mechanism); !ok || m.Tier != 1 {
			t.Errorf("tier 1 reports mechanism %q, which has no tier-1 entry in Mechanisms", box.Mechanism)
		}
	}
	tiers := map[int]bool{}
	for _, m := range Mechanisms {
		tiers[m.Tier] = true
	}
	for _, tr := range []sandbox.Tier{sandbox.Tier0, sandbox.Tier1, sandbox.Tier2} {
		if !tiers[int(tr)] {
			t.Errorf("tier %d has no mechanism", tr)
		}
	}
}

func testExe(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// validDoc is a small case file that passes, for the bad-input cases to
// break one thing at a time.
func validDoc() map[string]any {
	var rows []any
	for _, m := range Mechanisms {
		for _, p := range Platforms {
			rows = append(rows, map[string]any{"id": m.Name + "/" + p, "mechanism": m.Name, "platform": p, "status": "run", "reason": "r"})
		}
	}
	return map[string]any{"rows": rows, "attempts": []any{
		map[string]any{"id": "a1", "class": "fs-read", "what": "w"},
		map[string]any{"id": "a2", "class": "net", "what": "w"},
	}}
}

func TestParseBadInput(t *testing.T) {
	row := func(d map[string]any, i int) map[string]any { return d["rows"].([]any)[i].(map[string]any) }
	att := func(d map[string]any, i int) map[string]any { return d["attempts"].([]any)[i].(map[string]any) }
	cases := []struct {
		name   string
		break_ func(d map[string]any)
		want   string // in the error
	}{
		{"row without reason", func(d map[string]any) { delete(row(d, 3), "reason") }, `rows[3] (id "none/darwin/arm64"): missing field "reason"`},
		{"row with empty mechanism", func(d map[string]any) { row(d, 1)["mechanism"] = "" }, `rows[1] (id "none/linux/arm64"): missing field "mechanism"`},
		{"unknown mechanism", func(d map[string]any) { row(d, 0)["mechanism"] = "firejail" }, `rows[0] (id "none/linux/amd64"): unknown mechanism "firejail"`},
		{"unknown platform", func(d map[string]any) { row(d, 0)["platform"] = "plan9/386" }, `rows[0] (id "none/linux/amd64"): unknown platform`},
		{"unknown status", func(d map[string]any) { row(d, 0)["status"] = "maybe" }, `rows[0] (id "none/linux/amd64"): unknown status`},
		{"duplicate row id", func(d map[string]any) { row(d, 1)["id"] = "none/linux/amd64" }, `rows[1] (id "none/linux/amd64"): duplicate id (also rows[0])`},
		{"two rows for one pair", func(d map[string]any) { row(d, 1)["platform"] = "linux/amd64" }, `rows[1] (id "none/linux/arm64"): a second row for none on linux/amd64`},
		{"mechanism without a row", func(d map[string]any) {
			rs := d["rows"].([]any)
			d["rows"] = rs[:len(rs)-1]
		}, `no row for mechanism "gvisor" on platform windows/amd64`},
		{"attempt without what", func(d map[string]any) { delete(att(d, 1), "what") }, `attempts[1] (id "a2"): missing field "what"`},
		{"duplicate attempt id", func(d map[string]any) { att(d, 1)["id"] = "a1" }, `attempts[1] (id "a1"): duplicate id (also attempts[0])`},
		{"attempt id equal to a row id", func(d map[string]any) { att(d, 0)["id"] = "none/linux/amd64" }, `duplicate id (also rows[0])`},
		{"unknown class", func(d map[string]any) { att(d, 0)["class"] = "magic" }, `attempts[0] (id "a1"): unknown class "magic"`},
		{"unknown field", func(d map[string]any) { row(d, 0)["expect"] = "held" }, `unknown field "expect"`},
		{"no attempts", func(d map[string]any) { d["attempts"] = []any{} }, `no attempts`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := validDoc()
			c.break_(d)
			data, _ := json.Marshal(d)
			_, err := Parse(data)
			if err == nil {
				t.Fatalf("got no error, want one with %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %q, want it to contain %q", err, c.want)
			}
			if errs.ClassOf(err) != errs.Invalid {
				t.Errorf("class: got %v, want invalid", errs.ClassOf(err))
			}
		})
	}
	data, _ := json.Marshal(validDoc())
	if _, err := Parse(data); err != nil {
		t.Fatalf("the valid document: %v", err)
	}
	if _, err := Parse(append(data, []byte(`{}`)...)); err == nil {
		t.Errorf("trailing JSON accepted")
	}
}

func FuzzParse(f *testing.F) {
	data, _ := json.Marshal(validDoc())
	f.Add(data)
	f.Add([]byte(`{"rows":[{"id":"x"}],"attempts":[]}`))
	f.Add([]byte(`{"rows":null}`))
	f.Add([]byte(`[]`))
	if real, err := os.ReadFile(caseFile); err == nil {
		f.Add(real)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err == nil && (c == nil || len(c.Attempts) == 0) {
			t.Fatalf("accepted a case file without attempts")
		}
	})
}

// TestMatrix runs every attempt unconfined and on every mechanism this host
// has. Nothing may escape and no box may fail to start; an attempt the
// unconfined run could not make is untested, and says why.
func TestMatrix(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the attacks exist only on Linux")
	}
	if testing.Short() {
		t.Skip("the matrix starts a few hundred processes")
	}
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.MissingPart(t, "no tier-1 box (%s): the matrix runs unconfined and on tier 0 only", r.Why)
	}
	c := loadCases(t)
	var ids []string
	if *only != "" {
		ids = strings.Split(*only, ",")
	}
	rep, err := Run(context.Background(), Options{Exe: testExe(t), Cases: c, Only: ids})
	if err != nil {
		t.Fatal(err)
	}
	if *reportFile != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		os.WriteFile(*reportFile, b, 0o644)
	}
	var buf bytes.Buffer
	rep.Table(&buf)
	t.Log("\n" + buf.String())
	for _, r := range rep.Results {
		switch r.Outcome {
		case Escaped:
			t.Errorf("%s escaped on %s: %s", r.Attempt, r.Mechanism, r.Detail)
		case Failed:
			t.Errorf("%s on %s: the box failed: %s", r.Attempt, r.Mechanism, r.Detail)
		case Untested:
			if r.Detail == "" {
				t.Errorf("%s on %s: untested without a reason", r.Attempt, r.Mechanism)
			}
		}
	}
	reached := 0
	for _, b := range rep.Baselines {
		if b.Reached {
			reached++
		}
	}
	// A matrix where nothing reached its target unconfined tests nothing.
	if len(rep.Baselines) > 10 && reached < len(rep.Baselines)/2 {
		t.Errorf("only %d of %d attempts reached their targets unconfined", reached, len(rep.Baselines))
	}
	ran1 := false
	for _, m := range rep.Mechanisms {
		if m.Tier == 1 && m.Status == StatusRun {
			ran1 = true
		}
	}
	if !ran1 {
		t.Logf("tier 1 did not run here: only the unconfined and tier-0 columns were tested")
	}
	checkTier2Column(t, rep)
}

// checkTier2Column: the gVisor column runs where tier 2 exists (under
// CI=true it must), and every attempt held at tier 1 is held at tier 2 as
// well, unless it needs the network a gVisor box does not have yet.
func checkTier2Column(t *testing.T, rep *Report) {
	t.Helper()
	var ran2 bool
	for _, m := range rep.Mechanisms {
		if m.Tier == 2 && m.Status == StatusRun {
			ran2 = true
		} else if m.Tier == 2 {
			testsupport.MissingPart(t, "the gVisor column did not run: %s", m.Reason)
		}
	}
	if !ran2 {
		return
	}
	byAttempt := map[string]map[int]Result{}
	tierOf := map[string]int{}
	for _, m := range rep.Mechanisms {
		tierOf[m.Name] = m.Tier
	}
	for _, r := range rep.Results {
		if byAttempt[r.Attempt] == nil {
			byAttempt[r.Attempt] = map[int]Result{}
		}
		byAttempt[r.Attempt][tierOf[r.Mechanism]] = r
	}
	held := 0
	for id, rs := range byAttempt {
		one, two := rs[1], rs[2]
		if one.Outcome != Held {
			continue
		}
		switch {
		case two.Outcome == Held:
			held++
		case two.Outcome == Untested && two.Detail == gvisorCPUUntested:
		default:
			t.Errorf("%s is held at tier 1 but %s at tier 2: %s", id, two.Outcome, two.Detail)
		}
	}
	if held == 0 {
		t.Errorf("no attempt held at tier 2: the gVisor column tested nothing")
	}
}
