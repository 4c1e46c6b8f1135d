package jobs

import (
	"testing"
	"time"
)

// TestSlotsRefusedAttemptKeepsOthersReservation: two claims of one job
// (the first attempt timed out on the server, which put the claim again
// and this node took it too) share the job's slot. The first attempt's
// answer is refused and it gives its reservation back; that must not
// give back the second attempt's, whose answer was taken and whose run is
// on its way: else the node answers another job in its place and, when
// the run arrives, runs more boxes than its bound.
func TestSlotsRefusedAttemptKeepsOthersReservation(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &slots{max: 1, reserved: map[string]reservation{}, now: func() time.Time { return now }}
	first, ok := s.reserve("j")
	if !ok {
		t.Fatal("an empty node declined a claim")
	}
	now = now.Add(time.Second)
	if _, ok := s.reserve("j"); !ok {
		t.Fatal("the claim put again for a reserved job was declined")
	}
	s.unreserve("j", first) // the first attempt's answer refused
	if _, ok := s.reserve("k"); ok {
		t.Fatal("the refused attempt gave back the slot the taken one holds: another job was answered in its place")
	}
	release := mustStart(t, s, "j")
	defer release()
	if s.running+len(s.reserved) > s.max {
		t.Fatalf("%d boxes and %d reservations on a node of %d", s.running, len(s.reserved), s.max)
	}
}

// held is whether a reservation was made, its number dropped.
func held(_ uint64, ok bool) bool { return ok }
