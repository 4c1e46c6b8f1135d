package runner

import (
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/sandbox"
)

// TestWarmPidsAfresh: a call is given the process ids the call before it
// was, however many processes that one ran; without that its first id
// (and /proc/loadavg, ns_last_pid) counts them.
func TestWarmPidsAfresh(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	const script = `echo $$ $(cut -d' ' -f5 /proc/loadavg) $(cat /proc/sys/kernel/ns_last_pid)`
	// The box's first call comes while its init may still be starting
	// threads of its own (ids of the box's too).
	mustWarm(t, p, spec, "true")
	first := mustWarm(t, p, spec, "sh", "-c", script+`; i=0; while [ $i -lt 40 ]; do /bin/true; i=$((i+1)); done`)
	second := mustWarm(t, p, spec, "sh", "-c", script)
	if !strings.Contains(lastNote(second), "call 3") || p.Boxes() != 1 {
		t.Fatalf("the second call did not run in the first call's box (%d boxes, %q), so this test shows nothing", p.Boxes(), lastNote(second))
	}
	a, b := strings.Fields(first.stdout), strings.Fields(second.stdout)
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("unexpected output %q, %q", first.stdout, second.stdout)
	}
	pa, _ := strconv.Atoi(a[0])
	if pa < 2 {
		t.Fatalf("the first call's pid %q", a[0])
	}
	if a[0] != b[0] {
		t.Errorf("the second call was given pid %s, the first %s: it can count the %d processes run before it", b[0], a[0], 40)
	}
	if a[1] != b[1] || a[2] != b[2] {
		t.Errorf("the last pid of the box's namespace carried over: loadavg %s then %s, ns_last_pid %s then %s", a[1], b[1], a[2], b[2])
	}
}

// TestWarmInitHidden: a call sees in /proc only processes of its own: not
// the box's init, whose counters (/proc/1/stat's cutime, cminflt, its
// context switches) add up what every call before it did.
func TestWarmInitHidden(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	// Each line: a process this call can see in /proc, its session and
	// its children's page faults (cminflt).
	const script = `for d in /proc/[0-9]*; do [ -r $d/stat ] && echo ${d#/proc/} $(cut -d' ' -f6,11 $d/stat); done 2>/dev/null; echo self $$`
	mustWarm(t, p, spec, "sh", "-c", `i=0; while [ $i -lt 20 ]; do /bin/true; i=$((i+1)); done`)
	o := mustWarm(t, p, spec, "sh", "-c", script)
	if !strings.Contains(lastNote(o), "call 2") {
		t.Fatalf("the second call did not run in the first call's box (%q), so this test shows nothing", lastNote(o))
	}
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	self := strings.TrimPrefix(lines[len(lines)-1], "self ")
	seen := 0
	for _, l := range lines[:len(lines)-1] {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue // a process that ended while listed
		}
		seen++
		if f[1] != self {
			t.Errorf("the call sees process %s of session %s (its own is %s), children's page faults %s:\n%s", f[0], f[1], self, f[2], o.stdout)
		}
	}
	if seen == 0 {
		t.Fatalf("the call saw no process, not even its own:\n%s", o.stdout)
	}
}

// privateBox is a pool whose one box has served a call, and has reset its
// process ids since: for tests of its reset server.
func privateBox(t *testing.T) (*Pool, sandbox.Spec, *warmBox) {
	t.Helper()
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	mustWarm(t, p, spec, "true")
	p.mu.Lock()
	var wb *warmBox
	for b := range p.all {
		wb = b
	}
	n := len(p.all)
	p.mu.Unlock()
	if n != 1 || !wb.private {
		t.Fatalf("%d boxes, or the box's process ids are not reset, so this test shows nothing", n)
	}
	<-wb.settled // the call's reset is done
	return p, spec, wb
}

// TestWarmPidResetterGone: a box whose process id reset server has ended
// serves no call after the one it could not reset after: the ids would
// carry over.
func TestWarmPidResetterGone(t *testing.T) {
	p, spec, wb := privateBox(t)
	wb.pids.cmd.Process.Kill()
	<-wb.pids.exited
	// Reset before it began; its own end finds the server gone.
	if o := mustWarm(t, p, spec, "true"); !strings.Contains(lastNote(o), "call 2") {
		t.Fatalf("the second call did not run in the first call's box (%q), so this test shows nothing", lastNote(o))
	}
	if o := mustWarm(t, p, spec, "true"); strings.Contains(lastNote(o), "call 3") {
		t.Errorf("a box whose process ids could not be reset served another call: %q", lastNote(o))
	}
}

// TestWarmPidResetterOutOfReach: a call, root in its box, can neither
// see, stop nor kill the box's process id reset server, which lives in
// its PID namespace for the box's life: the next call in the box is
// given the same ids.
func TestWarmPidResetterOutOfReach(t *testing.T) {
	p, spec, wb := privateBox(t)
	const script = `echo $$; for p in $(seq 2 64); do [ $p = $$ ] && continue; { kill -STOP $p; kill -KILL $p; } 2>/dev/null; [ -e /proc/$p/status ] && echo seen $p; done; true`
	first := mustWarm(t, p, spec, "sh", "-c", script)
	if strings.Contains(first.stdout, "seen") {
		t.Errorf("the call sees a process of the box's own:\n%s", first.stdout)
	}
	second := mustWarm(t, p, spec, "sh", "-c", "echo $$")
	if !strings.Contains(lastNote(second), "call 3") {
		t.Fatalf("the box was retired after a call signalled every id of its namespace (%q): its reset server was reached", lastNote(second))
	}
	if a, b := strings.Fields(first.stdout)[0], strings.TrimSpace(second.stdout); a != b {
		t.Errorf("the call after was given pid %s, the call before %s", b, a)
	}
	select {
	case <-wb.pids.exited:
		t.Error("the reset server ended")
	default:
	}
}
