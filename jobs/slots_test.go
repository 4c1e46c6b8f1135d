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
	release := mustStart(t, s, "a")
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
	release := mustStart(t, s, "a")
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
			release := mustStart(t, n.slots, "a")
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

// mustStart starts job on s, failing the test where it is refused.
func mustStart(t *testing.T, s *slots, job string) func() {
	t.Helper()
	release, err := s.start(job)
	if err != nil {
		t.Fatalf("start %s: %v", job, err)
	}
	return release
}

// TestSlotsStartHoldsTheBound: a run, lease or call of a job that holds no
// reservation (its claim was never answered here, or its hold lapsed)
// starts only where the node has room; a node at its bound refuses it,
// so tasks queued on the node's queue by whoever can cannot run more
// boxes than the bound.
func TestSlotsStartHoldsTheBound(t *testing.T) {
	s := &slots{max: 2, reserved: map[string]reservation{}, now: time.Now}
	if !held(s.reserve("a")) {
		t.Fatal("an empty node declined a claim")
	}
	ra := mustStart(t, s, "a")
	defer ra()
	rb := mustStart(t, s, "unclaimed") // room for one more: started
	if _, err := s.start("another unclaimed"); err == nil {
		t.Fatalf("a job with no reservation started on a node running %d of %d", s.running, s.max)
	}
	rb()
	if !held(s.reserve("c")) {
		t.Fatal("a claim was declined with a slot free")
	}
	if _, err := s.start("unclaimed"); err == nil {
		t.Fatal("a job with no reservation took the slot another's claim holds")
	}
	rc := mustStart(t, s, "c")
	defer rc()
	if s.running > s.max {
		t.Fatalf("%d boxes on a node of %d", s.running, s.max)
	}
}
