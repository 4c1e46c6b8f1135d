package runner

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// BenchmarkWarmTrue compares `/bin/true` in a warm box (Pool.Run: the
// call's own plan, its fingerprint, the call in the running box) with a
// fresh box per call (Run), alternating within one run so the host's load
// weighs on both alike, with and without cgroup limits. It reports both
// medians, their ratio, and what of the warm call is its plan.
func BenchmarkWarmTrue(b *testing.B) {
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(b, "tier 1 unavailable here: %s", r.Why)
	}
	exe := testExe(b)
	spec := sandbox.Spec{Workdir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	lim := spec
	lim.Limits = sandbox.Limits{MemoryBytes: 2 << 30, CPU: 1, Pids: 512, Wall: time.Hour}
	for _, c := range []struct {
		name string
		spec sandbox.Spec
	}{{"nolimits", spec}, {"limits", lim}} {
		b.Run(c.name, func(b *testing.B) {
			p := NewPool(exe, 0)
			defer p.Close()
			req := Request{Argv: []string{"/bin/true"}, Spec: c.spec, Tier: sandbox.Tier1}
			ctx := context.Background()
			if _, err := p.Run(ctx, req); err != nil { // makes the box
				b.Fatal(err)
			}
			var warm, fresh, plan []time.Duration
			for b.Loop() {
				t0 := time.Now()
				res, err := p.Run(ctx, req)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("warm: exit %d, %v", res.ExitCode, err)
				}
				warm = append(warm, time.Since(t0))
				t0 = time.Now()
				res, err = Run(ctx, exe, req)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("fresh: exit %d, %v", res.ExitCode, err)
				}
				fresh = append(fresh, time.Since(t0))
				t0 = time.Now()
				box, err := sandbox.PlanWarm(c.spec, sandbox.Tier1, exe)
				if err != nil {
					b.Fatal(err)
				}
				box.Fingerprint()
				plan = append(plan, time.Since(t0))
				box.Close()
			}
			if p.Boxes() != 1 {
				b.Fatalf("the pool holds %d boxes, want 1: the calls did not share one", p.Boxes())
			}
			mw, mf := median(warm), median(fresh)
			b.ReportMetric(float64(mw.Microseconds())/1000, "warm-ms")
			b.ReportMetric(float64(mf.Microseconds())/1000, "fresh-ms")
			b.ReportMetric(float64(mf)/float64(mw), "fresh/warm")
			b.ReportMetric(float64(median(plan).Microseconds())/1000, "plan-ms")
		})
	}
}
