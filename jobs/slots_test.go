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
	s := &slots{max: 2, reserved: map[string]reservation{}, now: func() time.Time { return now }}
	if !held(s.reserve("a")) || !held(s.reserve("b")) {
		t.Fatal("a node with room declined a claim")
	}
	if held(s.reserve("c")) {
		t.Fatal("a node at its bound answered a third claim")
	}
	if !held(s.reserve("a")) {
		t.Error("a claim put again for a job already reserved was declined")
	}
	release := s.start("a")
	if held(s.reserve("c")) {
		t.Fatal("a running box and a reservation left room for a third")
	}
	release()
	if !held(s.reserve("c")) {
		t.Fatal("a box ended and its slot was not given back")
	}
	// b's run never arrives: its slot is held only while the workflow
	// waits for the run to start.
	now = now.Add(reserveFor + time.Second)
	if !held(s.reserve("d")) || !held(s.reserve("e")) {
		t.Error("reservations past their wait still held their slots")
	}
	if held(s.reserve("f")) {
		t.Error("more claims answered than the bound")
	}
}

// TestSlotsWaitForRoom: a claim on a full node waits for a box to end and
// takes its slot, and declines when none ends within its wait or its
// context ends; the bound holds throughout.
func TestSlotsWaitForRoom(t *testing.T) {
	s := &slots{max: 1, reserved: map[string]reservation{}, now: time.Now}
	release := s.start("a")
	ctx := context.Background()
	start := time.Now()
	if held(s.reserveWithin(ctx, "b", 50*time.Millisecond)) {
		t.Fatal("a full node answered a claim with no box ended")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("declined after %s, before its wait", d)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		release()
	}()
	if !held(s.reserveWithin(ctx, "b", 5*time.Second)) {
		t.Fatal("a box ended and the waiting claim did not take its slot")
	}
	if held(s.reserveWithin(ctx, "c", 20*time.Millisecond)) {
		t.Fatal("a second claim took the one slot too")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if held(s.reserveWithin(cctx, "c", 5*time.Second)) {
		t.Fatal("a claim whose context ended was answered")
	}
}

// TestAttackDeclinedClaimKeepsNoSlot: a claim that waited on a full node
// and then declined (the node's opt-out changed, or it began to stop,
// while it waited) gives its reservation back at once: the box that ended
// is free for the next claim, not held for reserveFor by a job the node
// said no to.
func TestAttackDeclinedClaimKeepsNoSlot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(n *Node)
	}{
		{"opt-out changed", func(n *Node) { n.optedOut.Store(true) }},
		{"node stopping", func(n *Node) { n.stopping.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NodeConfig{ID: "n1", Pool: "ci", Concurrency: 1}
			n := &Node{cfg: cfg, slots: &slots{max: 1, reserved: map[string]reservation{}, now: time.Now}}
			release := n.slots.start("a")
			go func() {
				time.Sleep(20 * time.Millisecond)
				tc.change(n)
				release()
			}()
			if _, _, err := n.claim(context.Background(), cfg, ClaimRequest{Job: "b"}); err == nil {
				t.Fatal("a claim answered although the node changed while it waited")
			}
			if !held(n.slots.reserve("c")) {
				t.Fatal("a declined claim still holds the node's only slot")
			}
		})
	}
}
