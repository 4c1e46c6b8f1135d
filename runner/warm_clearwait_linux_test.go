package runner

import (
	"strings"
	"testing"
	"time"
)

// fillScratch is a Python program that leaves 500 000 empty files in
// /tmp: the box takes seconds to clear after it.
const fillScratch = `
import os
for d in range(500):
    os.mkdir("/tmp/d%d" % d)
    for i in range(1000):
        open("/tmp/d%d/f%d" % (d, i), "w").close()
print("FILLED")
`

// TestWarmSlowClearBounded: a call decides how long its box takes to clear
// (here by filling /tmp); the next call of the same confinement waits for
// that box no longer than clearWait and then runs in a new one, instead of
// waiting as long as the last call made the clear take (up to
// clearTimeout). Waiting without a bound, the next call took as long as
// the clear (about 4 s here).
func TestWarmSlowClearBounded(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	t0 := time.Now()
	mustWarm(t, p, spec, "true")
	coldStart := time.Since(t0)
	o := mustWarm(t, p, spec, "python3", "-c", fillScratch)
	if !strings.Contains(o.stdout, "FILLED") || !strings.Contains(lastNote(o), "call 2") {
		t.Fatalf("the filling call did not run in the warm box (%q, notes %q), so this test shows nothing", o.stdout, o.res.Description.Notes)
	}
	filled := time.Now()
	t1 := time.Now()
	o = mustWarm(t, p, spec, "sh", "-c", "ls /tmp/d0 2>/dev/null | wc -l")
	took := time.Since(t1)
	p.settledAll()
	cleared := time.Since(filled)
	// The wait's bound, and what a new box costs beside it.
	bound := clearWait + 2*coldStart + 500*time.Millisecond
	if cleared < bound+500*time.Millisecond {
		t.Fatalf("the box was clear after %v, too soon to tell a bounded wait (%v) from an unbounded one, so this test shows nothing", cleared, bound)
	}
	if got := strings.TrimSpace(o.stdout); got != "0" {
		t.Errorf("the next call found %s of the last call's files in /tmp, want none", got)
	}
	if !strings.Contains(lastNote(o), "call 1 of") {
		t.Errorf("the next call ran in the box being cleared (notes %q), want a new one", o.res.Description.Notes)
	}
	if took > bound {
		t.Errorf("the next call took %v while the last call's box was cleared (in %v), want at most %v: it waited for that box without a bound (notes %q)",
			took, cleared, bound, o.res.Description.Notes)
	}
}
