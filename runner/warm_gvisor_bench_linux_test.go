package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/sandbox"
)

// BenchmarkWarmGVisorTrue is `/bin/true` at tier 2 three ways, alternating
// within one run so the host's load weighs on all alike: a call in a warm
// box (Pool.Run: the call's own plan and fingerprint, then the call over
// the control socket), `runsc exec` into that same running sandbox by
// hand, and a cold box per call (Run). It reports the medians, the ratios
// to the warm call, and what of the warm call is its key plan (the call
// planned afresh for its fingerprint, PlanWarmKey). The floor is also
// reported: a spawn of /bin/true from a shell inside the same box, which
// no call can beat, so that a loaded host's figures can be read.
func BenchmarkWarmGVisorTrue(b *testing.B) {
	runsc := requireTier2Bench(b)
	exe := testExe(b)
	spec := sandbox.Spec{Workdir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	req := Request{Argv: []string{"/bin/true"}, Spec: spec, Tier: sandbox.Tier2}
	ctx := context.Background()
	p := NewPool(exe, 0)
	defer p.Close()
	before := gvisorBoxes(b, os.Getpid())
	if res, err := p.Run(ctx, req); err != nil || res.ExitCode != 0 { // makes the box
		b.Fatalf("warm: exit %d, %v", res.ExitCode, err)
	}
	var dir string
	for d := range gvisorBoxes(b, os.Getpid()) {
		if !before[d] {
			dir = d
		}
	}
	rec, err := sandbox.ReadGVisorRecord(dir)
	if err != nil {
		b.Fatalf("the warm box's record: %v", err)
	}
	// The floor: one spawn of /bin/true by a shell already inside the
	// box, measured by the box's own clock in a loop of spawnLoop.
	const spawnLoop = 20
	loop := Request{Argv: []string{"sh", "-c", `a=$(date +%s%N); i=0; while [ $i -lt ` + strconv.Itoa(spawnLoop) +
		` ]; do /bin/true; i=$((i+1)); done; b=$(date +%s%N); echo $((b-a))`}, Spec: spec, Tier: sandbox.Tier2}
	var warm, rexec, cold, plan, spawn []time.Duration
	for b.Loop() {
		var out strings.Builder
		loop.Stdout = &out
		if res, err := p.Run(ctx, loop); err != nil || res.ExitCode != 0 {
			b.Fatalf("spawn loop: exit %d, %v", res.ExitCode, err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
		if err != nil {
			b.Fatalf("spawn loop: %q", out.String())
		}
		spawn = append(spawn, time.Duration(ns/spawnLoop))

		t0 := time.Now()
		res, err := p.Run(ctx, req)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("warm: exit %d, %v", res.ExitCode, err)
		}
		warm = append(warm, time.Since(t0))

		t0 = time.Now()
		cmd := exec.Command(runsc, "--root", filepath.Join(dir, "state"), "exec", rec.ID, "/bin/true")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("runsc exec: %v: %s", err, out)
		}
		rexec = append(rexec, time.Since(t0))

		t0 = time.Now()
		if res, err := Run(ctx, exe, req); err != nil || res.ExitCode != 0 {
			b.Fatalf("cold: exit %d, %v", res.ExitCode, err)
		}
		cold = append(cold, time.Since(t0))

		t0 = time.Now()
		box, err := sandbox.PlanWarmKey(spec, sandbox.Tier2, exe)
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
	mw := median(warm)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(mw), "warm-ms")
	b.ReportMetric(ms(median(rexec)), "runsc-exec-ms")
	b.ReportMetric(ms(median(cold)), "cold-ms")
	b.ReportMetric(float64(median(rexec))/float64(mw), "runsc-exec/warm")
	b.ReportMetric(float64(median(cold))/float64(mw), "cold/warm")
	b.ReportMetric(ms(median(plan)), "keyplan-ms")
	b.ReportMetric(ms(median(spawn)), "inbox-spawn-ms")
	b.ReportMetric(float64(mw)/float64(median(spawn)), "warm/inbox-spawn")
}
