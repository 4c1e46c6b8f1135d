package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/sandbox"
)

// fillScratch is a Python program that leaves its argument's thousands of
// empty files in /tmp: the box takes seconds to clear after it.
const fillScratch = `
import os, sys
for d in range(int(sys.argv[1])):
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
// the clear (about 4 s to 7 s here). A machine that clears the files
// faster than a bounded wait can be told from an unbounded one is given
// more.
func TestWarmSlowClearBounded(t *testing.T) {
	requireTier1(t)
	spec := baseSpec(t)
	for _, thousands := range []int{250, 500, 1000} {
		p := warmPool(t)
		t0 := time.Now()
		mustWarm(t, p, spec, "true")
		coldStart := time.Since(t0)
		o := mustWarm(t, p, spec, "python3", "-c", fillScratch, strconv.Itoa(thousands))
		if !strings.Contains(o.stdout, "FILLED") || !strings.Contains(lastNote(o), "call 2") {
			t.Fatalf("the filling call did not run in the warm box (%q, notes %q), so this test shows nothing", o.stdout, o.res.Description.Notes)
		}
		filled := time.Now()
		o = mustWarm(t, p, spec, "sh", "-c", "ls /tmp/d0 2>/dev/null | wc -l")
		took := time.Since(filled)
		p.settledAll()
		cleared := time.Since(filled)
		// The wait's bound, and what a new box costs beside it.
		bound := clearWait + 2*coldStart + 500*time.Millisecond
		if cleared < bound+500*time.Millisecond {
			t.Logf("%d 000 files: the box was clear after %v, too soon to tell a bounded wait (%v) from an unbounded one", thousands, cleared, bound)
			continue
		}
		if got := strings.TrimSpace(o.stdout); got != "0" {
			t.Errorf("the next call found %s of the last call's files in /tmp, want none", got)
		}
		if !strings.Contains(lastNote(o), "call 1 of") {
			t.Errorf("the next call waited for the box being cleared and ran in it (notes %q), want a new box", o.res.Description.Notes)
		}
		if took > bound {
			t.Errorf("the next call took %v while the last call's box was cleared (in %v), want at most %v: it waited for that box without a bound (notes %q)",
				took, cleared, bound, o.res.Description.Notes)
		}
		return
	}
	t.Fatal("no box took long enough to clear to tell a bounded wait from an unbounded one, so this test shows nothing")
}

// TestWarmIdleBounded: calls whose confinement differs each time (here a
// bind of the call's own at the egress CA bundle's place, as every call
// whose policy has secrets or request rules has) each start a box that no
// later call can use; the pool keeps at most maxIdleTotal of them idle,
// not one per call for its idle time. Unbounded, each call left a box.
func TestWarmIdleBounded(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	calls := maxIdleTotal + 4
	for i := 0; i < calls; i++ {
		bundle := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(bundle, []byte("the CA of call "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s := spec
		s.Binds = []sandbox.Bind{{Src: bundle, Dst: "/run/airlock-egress/ca.pem"}}
		o := mustWarm(t, p, netSpecWith(s, newCallProxy(t, false)), "cat", "/run/airlock-egress/ca.pem")
		if want := "the CA of call " + strconv.Itoa(i); strings.TrimSpace(o.stdout) != want {
			t.Fatalf("call %d read %q at the bundle's place, want %q", i, o.stdout, want)
		}
		if !strings.Contains(lastNote(o), "call 1 of") {
			t.Fatalf("call %d ran in a box of another call's bind (notes %q), so this test shows nothing", i, o.res.Description.Notes)
		}
	}
	p.settledAll()
	if n := p.Boxes(); n > maxIdleTotal {
		t.Errorf("after %d calls of different confinements the pool holds %d boxes, want at most %d", calls, n, maxIdleTotal)
	}
}
