package jobs

import (
	"context"
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

// TestSlotsWaitForRoom: a claim on a full node waits for a box to end and
// takes its slot, and declines when none ends within its wait or its
// context ends; the bound holds throughout.
func TestSlotsWaitForRoom(t *testing.T) {
	s := &slots{max: 1, reserved: map[string]time.Time{}, now: time.Now}
	release := s.start("a")
	ctx := context.Background()
	start := time.Now()
	if s.reserveWithin(ctx, "b", 50*time.Millisecond) {
		t.Fatal("a full node answered a claim with no box ended")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("declined after %s, before its wait", d)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		release()
	}()
	if !s.reserveWithin(ctx, "b", 5*time.Second) {
		t.Fatal("a box ended and the waiting claim did not take its slot")
	}
	if s.reserveWithin(ctx, "c", 20*time.Millisecond) {
		t.Fatal("a second claim took the one slot too")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if s.reserveWithin(cctx, "c", 5*time.Second) {
		t.Fatal("a claim whose context ended was answered")
	}
}
