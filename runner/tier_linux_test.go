package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
)

// TestRunRefusesAuto: the runner takes a concrete tier only. Before, auto
// was resolved here by a probe, so a library caller on a host without
// tier 1 ran its command unconfined without having asked for it; now
// nothing runs and the error says who must choose.
func TestRunRefusesAuto(t *testing.T) {
	wd := t.TempDir()
	mark := filepath.Join(wd, "ran")
	spec := sandbox.Spec{Workdir: wd, Env: []string{"PATH=/usr/bin:/bin"}}
	for name, start := range map[string]func() error{
		"Run": func() error {
			_, err := Run(context.Background(), testExe(t), Request{Argv: []string{"touch", mark}, Spec: spec, Tier: sandbox.TierAuto})
			return err
		},
		"Start": func() error {
			p, err := Start(context.Background(), testExe(t), Request{Argv: []string{"touch", mark}, Spec: spec, Tier: sandbox.TierAuto})
			if err == nil {
				p.Wait()
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := start()
			if !errs.Is(err, errs.Invalid) || err.Error() != "runner: tier auto must be resolved by the kernel" {
				t.Errorf("got %v (class %v), want errs.Invalid %q", err, errs.ClassOf(err), "runner: tier auto must be resolved by the kernel")
			}
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("the command ran")
			}
		})
	}
}

// TestRunResolvedTier: what Resolve gives for auto on this host is what the
// runner runs at.
func TestRunResolvedTier(t *testing.T) {
	tier, err := sandbox.Resolve(sandbox.TierAuto, sandbox.ProbeHost())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no tier for auto on CI: %v", err)
		}
		t.Skip(err)
	}
	o := runIn(t, tier, baseSpec(t), "", "true")
	if o.err != nil || o.res.ExitCode != 0 || o.res.Description.Tier != int(tier) {
		t.Errorf("got exit %d, tier %d, err %v; want 0 at tier %d", o.res.ExitCode, o.res.Description.Tier, o.err, tier)
	}
	if !strings.Contains(o.res.Description.Mechanism, "bubblewrap") && tier == sandbox.Tier1 {
		t.Errorf("tier 1 ran under %q", o.res.Description.Mechanism)
	}
}

// TestEveryTierHasARunner: each tier the planner can make a box for has a
// tierRunner, so a tier added to the sandbox cannot reach a runner that
// would start it some other way; a box of a tier without one is refused.
func TestEveryTierHasARunner(t *testing.T) {
	for _, tier := range sandbox.Tiers() {
		if _, ok := tierRunners[tier]; !ok {
			t.Errorf("sandbox plans tier %v, the runner has no entry for it", tier)
		}
	}
	for tier := range tierRunners {
		found := false
		for _, st := range sandbox.Tiers() {
			found = found || st == tier
		}
		if !found {
			t.Errorf("the runner has an entry for tier %v, which the sandbox does not plan", tier)
		}
	}
	if _, err := runnerFor(&sandbox.Box{Tier: sandbox.Tier(9)}); !errs.Is(err, errs.Unavailable) {
		t.Errorf("runnerFor(tier 9) = %v, want errs.Unavailable", err)
	}
}
