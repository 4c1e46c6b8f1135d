package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// requireTier2Bench stops a benchmark on a host without a usable gVisor.
func requireTier2Bench(b *testing.B) string {
	b.Helper()
	testsupport.Require(b, testsupport.Root)
	if _, err := sandbox.Resolve(sandbox.Tier2, sandbox.ProbeHost()); err != nil {
		testsupport.Missing(b, "tier 2 unavailable here: %v", err)
	}
	runsc, err := exec.LookPath("runsc")
	if err != nil {
		testsupport.Missing(b, "no runsc on PATH: %v", err)
	}
	return runsc
}

// runTimed runs argv through runner.Run at tier with spec and returns how
// long the whole call took (plan, start, teardown).
func runTimed(b *testing.B, tier sandbox.Tier, spec sandbox.Spec, argv ...string) time.Duration {
	b.Helper()
	start := time.Now()
	res, err := Run(context.Background(), testExe(b), Request{Argv: argv, Spec: spec, Tier: tier, OutputCap: 1 << 20})
	took := time.Since(start)
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("tier %s %q: exit %d, %v", tier, argv, res.ExitCode, err)
	}
	return took
}

// reportRatio reports the medians of each series in ms and the ratio of
// the first to each other one.
func reportRatio(b *testing.B, names []string, series ...[]time.Duration) {
	b.Helper()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	first := median(series[0])
	for i, s := range series {
		b.ReportMetric(ms(median(s)), names[i]+"-ms")
		if i > 0 {
			b.ReportMetric(float64(first)/float64(median(s)), names[0]+"/"+names[i])
		}
	}
}

// BenchmarkGVisorCold is a cold tier-2 call (`/bin/true` through
// runner.Run: plan, bundle, launcher, runsc run, airlock's init,
// teardown) against `runsc do /bin/true` by hand (no bundle, no init, the
// host's root read-only) and against the same call at tier 1, alternating
// within one run so the host's load weighs on all alike.
func BenchmarkGVisorCold(b *testing.B) {
	runsc := requireTier2Bench(b)
	spec := sandbox.Spec{Workdir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	state := b.TempDir()
	var two, do, one []time.Duration
	for i := 0; i < b.N; i++ {
		two = append(two, runTimed(b, sandbox.Tier2, spec, "/bin/true"))
		start := time.Now()
		cmd := exec.Command(runsc, "--root", state, "--platform", "systrap", "--network", "none", "--ignore-cgroups",
			"do", "/bin/true")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("runsc do: %v: %s", err, out)
		}
		do = append(do, time.Since(start))
		one = append(one, runTimed(b, sandbox.Tier1, spec, "/bin/true"))
	}
	reportRatio(b, []string{"tier2", "runsc-do", "tier1"}, two, do, one)
}

// gitTree makes a git repository of n committed files (100 per
// directory) in a new directory and returns it.
func gitTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.Mkdir(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q"}, {"add", "-A"},
		{"-c", "user.email=bench@airlock.test", "-c", "user.name=bench", "commit", "-q", "-m", "tree"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

// BenchmarkGVisorGitStatus is file-heavy work: `git status` on a 10k-file
// tree (a stat of every file, the index read) at tier 2 against tier 1,
// alternating within one run.
func BenchmarkGVisorGitStatus(b *testing.B) {
	requireTier2Bench(b)
	repo := gitTree(b, 10000)
	spec := sandbox.Spec{Workdir: repo, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	argv := []string{"git", "--no-optional-locks", "status", "--porcelain"}
	b.ResetTimer()
	var two, one []time.Duration
	for i := 0; i < b.N; i++ {
		two = append(two, runTimed(b, sandbox.Tier2, spec, argv...))
		one = append(one, runTimed(b, sandbox.Tier1, spec, argv...))
	}
	reportRatio(b, []string{"tier2", "tier1"}, two, one)
}
