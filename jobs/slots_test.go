package jobs

import (
	"testing"
	"time"
)

// TestSlots: a node at its bound declines further claims until a box
// ends, and a claim whose run never came gives its slot back.
func TestSlots(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &slots{max: 2, reserved: map[string]time.Time{}, now: func() time.Time { return now }}
	if !s.reserve("a") || !s.reserve("b") {
		t.Fatal("a node with room declined a claim")
	}
	if s.reserve("c") {
		t.Fatal("a node at its bound answered a third claim")
	}
	if !s.reserve("a") {
		t.Error("a claim put again for a job already reserved was declined")
	}
	release := s.start("a")
	if s.reserve("c") {
		t.Fatal("a running box and a reservation left room for a third")
	}
	release()
	if !s.reserve("c") {
		t.Fatal("a box ended and its slot was not given back")
	}
	// b's run never arrives: its slot is held only while the workflow
	// waits for the run to start.
	now = now.Add(reserveFor + time.Second)
	if !s.reserve("d") || !s.reserve("e") {
		t.Error("reservations past their wait still held their slots")
	}
	if s.reserve("f") {
		t.Error("more claims answered than the bound")
	}
}
