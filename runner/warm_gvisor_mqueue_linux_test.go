package runner

import (
	"strings"
	"testing"
)

// mqMake and mqCheck make and look for the POSIX message queue "left"
// with mq_open itself (x86-64 syscall 240; the kernel's name has no
// leading slash): no mq tool is in every box.
const (
	mqMake  = `perl -e 'my $n="left"; my $fd=syscall(240,$n,66,384,0); print $fd>=0 ? "mq=made\n" : "mq=refused\n"'`
	mqCheck = `perl -e 'my $n="left"; my $fd=syscall(240,$n,2,0,0); print $fd>=0 ? "mq=present\n" : "mq=absent\n"'`
)

// TestWarmGVisorMqueueCleared: a POSIX message queue outlives every
// process in the box's IPC namespace, and runsc mounts no mqueue file
// system for the init to empty; so a warm tier-2 box refuses mq_open, and
// no queue a call makes is there for the next call in the same box.
func TestWarmGVisorMqueueCleared(t *testing.T) {
	requireTier2(t)
	p := warmPool(t)
	spec := baseSpec(t)
	o := mustWarm2(t, p, spec, "sh", "-c", mqMake)
	if !strings.Contains(o.stdout, "mq=refused") {
		t.Errorf("a call in a warm tier-2 box made a message queue (stdout %q)", o.stdout)
	}
	o = mustWarm2(t, p, spec, "sh", "-c", mqCheck)
	if !strings.Contains(o.stdout, "mq=absent") {
		t.Errorf("the second call saw the first call's message queue:\n%s", o.stdout)
	}
	if !strings.Contains(lastNote(o), "call 2") || p.Boxes() != 1 {
		t.Errorf("the second call did not run in the first call's box (%d boxes, notes %q), so this test shows nothing",
			p.Boxes(), o.res.Description.Notes)
	}
}
