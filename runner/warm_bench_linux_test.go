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
// medians, their ratio, what of the warm call is its plan, and where a
// warm call's time goes (warmPhases: plan, take, send, box, of it the
// init's start and run, drain, and the rest), each a median.
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
			var phases []warmPhases
			p.trace = func(ph warmPhases) { phases = append(phases, ph) }
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
			reportPhases(b, phases)
		})
	}
}

// reportPhases reports the median of each phase of the warm calls traced,
// in milliseconds, as w-<phase>-ms; rest is what no phase names.
func reportPhases(b *testing.B, phases []warmPhases) {
	if len(phases) == 0 {
		b.Fatal("no warm call was traced")
	}
	pick := func(f func(warmPhases) time.Duration) time.Duration {
		ds := make([]time.Duration, len(phases))
		for i, ph := range phases {
			ds[i] = f(ph)
		}
		return median(ds)
	}
	for _, m := range []struct {
		name string
		f    func(warmPhases) time.Duration
	}{
		{"plan", func(ph warmPhases) time.Duration { return ph.Plan }},
		{"take", func(ph warmPhases) time.Duration { return ph.Take }},
		{"send", func(ph warmPhases) time.Duration { return ph.Send }},
		{"box", func(ph warmPhases) time.Duration { return ph.Box }},
		{"start", func(ph warmPhases) time.Duration { return ph.Start }},
		{"run", func(ph warmPhases) time.Duration { return ph.Run }},
		{"drain", func(ph warmPhases) time.Duration { return ph.Drain }},
		{"rest", func(ph warmPhases) time.Duration { return ph.Total - ph.Plan - ph.Take - ph.Send - ph.Box - ph.Drain }},
	} {
		b.ReportMetric(float64(pick(m.f).Microseconds())/1000, "w-"+m.name+"-ms")
	}
}
