package runner

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// TestWarmReportDecode: the init's two reports on a call are read exactly;
// a line of another kind than the one due (out of order), of a kind not
// known, with a field the runner does not know or with trailing data is
// refused, and the box with it.
func TestWarmReportDecode(t *testing.T) {
	rows := []struct {
		name, line, kind string
		clear            bool // decode into a BoxClear
		ok               bool
	}{
		{"done", `{"kind":"done","started":true,"exit":3}`, boxconf.KindDone, false, true},
		{"clear", `{"kind":"clear"}`, boxconf.KindClear, true, true},
		{"clear dirty", `{"kind":"clear","dirty":"/tmp: busy"}`, boxconf.KindClear, true, true},
		{"clear where done is due", `{"kind":"clear"}`, boxconf.KindDone, false, false},
		{"done where clear is due", `{"kind":"done","started":true,"exit":0}`, boxconf.KindClear, true, false},
		{"no kind", `{"started":true,"exit":0}`, boxconf.KindDone, false, false},
		{"unknown kind", `{"kind":"cleared"}`, boxconf.KindClear, true, false},
		{"kind in another case", `{"kind":"Done","started":true}`, boxconf.KindDone, false, false},
		{"unknown field", `{"kind":"clear","clean":true}`, boxconf.KindClear, true, false},
		{"trailing data", `{"kind":"clear"} {"kind":"clear"}`, boxconf.KindClear, true, false},
		{"not JSON", `clear`, boxconf.KindClear, true, false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var v any = &boxconf.CallDone{}
			if r.clear {
				v = &boxconf.BoxClear{}
			}
			err := decodeReport([]byte(r.line+"\n"), r.kind, v)
			if got := err == nil; got != r.ok {
				t.Errorf("decodeReport(%s, %q): err %v, want ok %v", r.line, r.kind, err, r.ok)
			}
		})
	}
}

// TestWarmOutputComplete: a call's result is returned at the init's first
// report, before the box is cleared; by then every process in the box has
// ended, so all the call wrote is in it, on both streams, call after call.
func TestWarmOutputComplete(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	const out, errOut = 300000, 200000
	script := `head -c 300000 /dev/zero | tr '\0' a; (head -c 200000 /dev/zero | tr '\0' b >&2 &); wait`
	for i := 1; i <= 4; i++ {
		o := mustWarm(t, p, spec, "sh", "-c", script)
		if len(o.stdout) != out || strings.Trim(o.stdout, "a") != "" {
			t.Errorf("call %d: stdout has %d bytes, want %d of 'a'", i, len(o.stdout), out)
		}
		// The background writer was reparented to the init; its output
		// is the call's until it ends, and endAll ends it before the
		// report: what it wrote is whole or cut, never lost after.
		if len(o.stderr) > errOut || strings.Trim(o.stderr, "b") != "" {
			t.Errorf("call %d: stderr has %d bytes (%q…), want at most %d of 'b'", i, len(o.stderr), o.stderr[:min(20, len(o.stderr))], errOut)
		}
		if i > 1 && !strings.Contains(lastNote(o), "call "+string(rune('0'+i))) {
			t.Errorf("call %d did not run in the first call's box (notes %q), so this test shows nothing", i, o.res.Description.Notes)
		}
	}
}

// TestWarmNoCallWhileClearing: a call that leaves many files in /tmp makes
// its box slow to clear; the next call, sent as soon as the first's result
// is back, waits for that box to be clear and finds nothing of the first call's in /tmp.
func TestWarmNoCallWhileClearing(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	for i := 1; i <= 3; i++ {
		mustWarm(t, p, spec, "sh", "-c", "mkdir /tmp/d && cd /tmp/d && seq 1 20000 | xargs touch")
		o := mustWarm(t, p, spec, "sh", "-c", "ls /tmp/d 2>/dev/null | wc -l")
		if got := strings.TrimSpace(o.stdout); got != "0" {
			t.Errorf("round %d: the next call found %s of the last call's files in /tmp, want none: it ran in a box still being cleared", i, got)
		}
		if want := "call " + string(rune('0'+2*i)); !strings.Contains(lastNote(o), want) {
			t.Errorf("round %d: the next call did not wait for the box (notes %q, want %q), so this test shows nothing", i, o.res.Description.Notes, want)
		}
	}
	if p.Boxes() != 1 {
		t.Errorf("the pool holds %d boxes, want 1", p.Boxes())
	}
}

// TestWarmMountsWatched: a box whose mounts changed since it began (here a
// scratch mount detached from the host's side, as the kernel does when the
// host removes a path the box has a mount on) is not used again, though
// the next call's plan is the same; a mount made and gone again between
// calls leaves the box as it was, and it is used. The pool learns of a
// change from the kernel's mark on the box's mountinfo, not by reading it
// before every call, so this shows the mark is not missed.
func TestWarmMountsWatched(t *testing.T) {
	requireTier1(t)
	if _, err := exec.LookPath("nsenter"); err != nil {
		testsupport.Missing(t, "nsenter is needed to change a box's mounts from the host: %v", err)
	}
	p := warmPool(t)
	spec := baseSpec(t)
	box := func() int {
		p.settledAll()
		for _, pid := range marked(boxconf.FlagServe) {
			if parentOf(parentOf(pid)) == os.Getpid() && alive(pid) {
				return pid
			}
		}
		t.Fatal("no warm box of this test's is running")
		return 0
	}
	inBox := func(pid int, argv ...string) {
		t.Helper()
		out, err := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(pid), "-m", "-p", "-r", "-w", "--"}, argv...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%q in the box's mount namespace: %v: %s", argv, err, out)
		}
	}
	mustWarm(t, p, spec, "true")
	pid := box()
	inBox(pid, "mount", "-t", "tmpfs", "none", "/var/tmp")
	inBox(pid, "umount", "/var/tmp")
	if o := mustWarm(t, p, spec, "true"); !strings.Contains(lastNote(o), "call 2") {
		t.Errorf("a mount made and gone again retired the box (notes %q)", o.res.Description.Notes)
	}
	pid = box()
	inBox(pid, "umount", "-l", "/var/tmp")
	o := warmRun(t, p, spec, "sh", "-c", "grep -c ' /var/tmp ' /proc/self/mountinfo")
	if !strings.Contains(lastNote(o), "call 1") || strings.TrimSpace(o.stdout) != "1" {
		t.Errorf("a call ran in a box whose /var/tmp was detached (/var/tmp mounts %q, notes %q)", o.stdout, o.res.Description.Notes)
	}
}
