package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
)

// TestResolve: auto is the best the host gives and never a silent tier 0;
// an explicit tier the host cannot give is refused with the fix, never
// replaced.
func TestResolve(t *testing.T) {
	none := HostFrom(Report{Best: Tier0, Why: "tier 1 unavailable: bubblewrap is not installed"})
	one := HostFrom(Report{Best: Tier1, Why: "bubblewrap 0.11.0 with user namespaces and seccomp"})
	withRunsc := HostFrom(Report{Best: Tier1, GVisor: "/usr/local/bin/runsc", Runsc: RunscReport{Path: "/usr/local/bin/runsc", Usable: true}})
	oldRunsc := HostFrom(Report{Best: Tier1, GVisor: "/usr/bin/runsc", Runsc: judgeRunsc(RunscReport{Path: "/usr/bin/runsc", Static: true, Date: "20220228"})})
	tests := []struct {
		name  string
		req   Tier
		host  Host
		want  Tier
		class errs.Class
		msg   string // "": no error
	}{
		{"auto on a tier-1 host", TierAuto, one, Tier1, 0, ""},
		{"auto on a tier-0 host", TierAuto, none, 0, errs.Unavailable, "this host gives no confinement (run `airlock sandbox check` for the fix, or --sandbox off to run unconfined)"},
		{"auto on the zero Host", TierAuto, Host{}, 0, errs.Unavailable, "gives no confinement"},
		{"off on a tier-0 host", Tier0, none, Tier0, 0, ""},
		{"off on a tier-1 host", Tier0, one, Tier0, 0, ""},
		{"1 on a tier-1 host", Tier1, one, Tier1, 0, ""},
		{"1 on a tier-0 host", Tier1, none, 0, errs.Unavailable, "bubblewrap is not installed"},
		{"2 without gVisor", Tier2, one, 0, errs.Unavailable, "gVisor (runsc) is not installed"},
		{"2 with gVisor", Tier2, withRunsc, Tier2, 0, ""},
		{"auto with gVisor stays tier 1", TierAuto, withRunsc, Tier1, 0, ""},
		{"2 with an old gVisor", Tier2, oldRunsc, 0, errs.Unavailable, "older than"},
		{"unknown tier", Tier(7), one, 0, errs.Invalid, "want auto, 0, 1 or 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.req, tt.host)
			if tt.msg == "" {
				if err != nil || got != tt.want {
					t.Fatalf("Resolve(%v) = %v, %v; want %v", tt.req, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Resolve(%v) = %v, want a refusal containing %q", tt.req, got, tt.msg)
			}
			if c := errs.ClassOf(err); c != tt.class {
				t.Errorf("class = %v, want %v (%v)", c, tt.class, err)
			}
			if errs.ExitCode(err) != errs.ExitCannotRun {
				t.Errorf("exit code = %d, want %d", errs.ExitCode(err), errs.ExitCannotRun)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error = %q, want it to contain %q", err, tt.msg)
			}
		})
	}
}

// TestPlanRefusesAuto: the planner takes a concrete tier only, so nothing
// plans a box (tier 0 included) because nobody chose.
func TestPlanRefusesAuto(t *testing.T) {
	box, err := Plan(Spec{Workdir: t.TempDir()}, TierAuto, "/bin/true")
	if err == nil {
		box.Close()
		t.Fatalf("Plan(auto) gave a tier-%v box, want a refusal", box.Tier)
	}
	if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "tier auto must be resolved by the kernel") {
		t.Errorf("Plan(auto) error = %v (%v), want errs.Invalid saying auto must be resolved by the kernel", err, errs.ClassOf(err))
	}
}

// TestProbeHostKeepsTheProbe: the Host a kernel keeps says what Probe says.
func TestProbeHostKeepsTheProbe(t *testing.T) {
	h, r := ProbeHost(), Probe()
	if h.Best() != r.Tier() || h.Report().Why != r.Why {
		t.Errorf("ProbeHost() = tier %v (%s), Probe() = tier %v (%s)", h.Best(), h.Report().Why, r.Tier(), r.Why)
	}
}

// TestProbeHostForResolvesAsTheWholeProbe: the narrower probe a kernel
// resolves its tier with answers every request as the whole probe does,
// and what it reports of tier 1 (the tier, why, the findings of
// bubblewrap, user namespaces and seccomp) is the whole probe's.
func TestProbeHostForResolvesAsTheWholeProbe(t *testing.T) {
	full := ProbeHost()
	for _, req := range []Tier{TierAuto, Tier0, Tier1, Tier2} {
		t.Run(req.String(), func(t *testing.T) {
			h := ProbeHostFor(req)
			got, gotErr := Resolve(req, h)
			want, wantErr := Resolve(req, full)
			if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("Resolve(%v, ProbeHostFor) = %v, %v; with the whole probe %v, %v", req, got, gotErr, want, wantErr)
			}
			r, fr := h.Report(), full.Report()
			if r.Best != fr.Best || r.Why != fr.Why || r.Protected != fr.Protected || r.Bubblewrap != fr.Bubblewrap {
				t.Errorf("ProbeHostFor(%v) reports tier %v (%s), bubblewrap %+v; the whole probe tier %v (%s), %+v", req, r.Best, r.Why, r.Bubblewrap, fr.Best, fr.Why, fr.Bubblewrap)
			}
			if len(r.Findings) > len(fr.Findings) {
				t.Fatalf("ProbeHostFor(%v) has %d findings, the whole probe %d", req, len(r.Findings), len(fr.Findings))
			}
			for i, f := range r.Findings {
				if f != fr.Findings[i] {
					t.Errorf("finding %d = %+v, the whole probe's %+v", i, f, fr.Findings[i])
				}
			}
		})
	}
}

// TestMechanismTable: every entry gives the tier it is listed under, and
// the table has no entry for auto or for a tier this build refuses.
func TestMechanismTable(t *testing.T) {
	for tier, m := range mechanisms {
		if m.Tier() != tier {
			t.Errorf("mechanisms[%v] gives tier %v", tier, m.Tier())
		}
		if m.Name() == "" {
			t.Errorf("mechanisms[%v] has no name for the evidence", tier)
		}
	}
	if _, ok := mechanisms[TierAuto]; ok {
		t.Error("the table has an entry for auto")
	}
	if _, ok := mechanisms[Tier0]; !ok {
		t.Error("the table has no tier 0")
	}
	if got := Tiers(); len(got) != len(mechanisms) || got[0] != Tier0 {
		t.Errorf("Tiers() = %v, want the table's tiers from 0", got)
	}
	box, err := Plan(Spec{Workdir: t.TempDir()}, Tier0, "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	if box.Mechanism != mechanisms[Tier0].Name() || box.Tier != Tier0 {
		t.Errorf("tier 0 plans a box of tier %v under %q, want %q", box.Tier, box.Mechanism, mechanisms[Tier0].Name())
	}
}
