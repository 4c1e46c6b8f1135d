package audit

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestCoalescer: the first refusals pass one by one, then a trickle at the
// refill rate; the rest are counted into summaries with every destination
// and the first and last time; none is lost.
func TestCoalescer(t *testing.T) {
	tests := []struct {
		name string
		o    CoalesceOptions
		// n refusals, one every gap, to destination dest(i).
		n    int
		gap  time.Duration
		dest func(i int) string
		// want
		passed   int
		slack    int // the refill is fractional: passed may be off by this much
		minSums  int
		maxSums  int
		distinct int
		overflow int64
	}{
		{name: "below the burst", o: CoalesceOptions{Burst: 5}, n: 5, gap: time.Millisecond,
			dest: func(int) string { return "a:1" }, passed: 5, maxSums: 0},
		{name: "flood of one destination", o: CoalesceOptions{Burst: 5, Every: time.Second, Window: time.Second, MaxWindow: 4 * time.Second},
			n: 10000, gap: time.Millisecond, dest: func(int) string { return "a:1" },
			// 10 s of flood: 5 at once, then one a second.
			passed: 5 + 10, slack: 1, minSums: 3, maxSums: 5, distinct: 1},
		{name: "distinct destinations past the cap", o: CoalesceOptions{Burst: 1, MaxDistinct: 10},
			n: 100, gap: time.Microsecond, dest: func(i int) string { return fmt.Sprintf("10.0.0.%d:80", i) },
			passed: 1, minSums: 1, maxSums: 1, distinct: 10, overflow: 89},
		{name: "slow refusals all pass", o: CoalesceOptions{Burst: 2, Every: time.Second},
			n: 50, gap: time.Second, dest: func(int) string { return "a:1" }, passed: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCoalescer(tt.o)
			passed := 0
			var sums []*Summary
			for i := 0; i < tt.n; i++ {
				pass, due := c.Take(t0.Add(time.Duration(i)*tt.gap), tt.dest(i), "not allowed")
				if due != nil {
					sums = append(sums, due)
				}
				if pass {
					passed++
				}
			}
			if s := c.Flush(); s != nil {
				sums = append(sums, s)
			}
			if c.Flush() != nil {
				t.Errorf("a second Flush returned a summary")
			}
			if passed < tt.passed-tt.slack || passed > tt.passed+tt.slack {
				t.Errorf("passed %d, want %d", passed, tt.passed)
			}
			if len(sums) < tt.minSums || len(sums) > tt.maxSums {
				t.Errorf("got %d summaries, want %d to %d", len(sums), tt.minSums, tt.maxSums)
			}
			var counted, overflow int64
			distinct := map[string]bool{}
			var last time.Time
			for _, s := range sums {
				counted += s.Count
				overflow += s.Overflow
				var perDest int64
				for d, n := range s.Destinations {
					distinct[d] = true
					perDest += n
				}
				if perDest+s.Overflow != s.Count {
					t.Errorf("summary counts %d, its destinations and overflow %d", s.Count, perDest+s.Overflow)
				}
				if s.First.After(s.Last) || s.First.Before(last) {
					t.Errorf("summary from %v to %v after one ending %v", s.First, s.Last, last)
				}
				last = s.Last
			}
			if int(counted)+passed != tt.n {
				t.Errorf("%d passed + %d counted, want %d: a refusal was lost", passed, counted, tt.n)
			}
			if len(distinct) != tt.distinct || overflow != tt.overflow {
				t.Errorf("got %d destinations and overflow %d, want %d and %d", len(distinct), overflow, tt.distinct, tt.overflow)
			}
		})
	}
}

// TestCoalescerWindowsGrow: under a long flood the windows double up to
// the cap, so the records a flood costs grow with its length's logarithm
// until the cap, then by one per MaxWindow.
func TestCoalescerWindowsGrow(t *testing.T) {
	c := NewCoalescer(CoalesceOptions{Burst: 1, Every: time.Hour, Window: time.Second, MaxWindow: 8 * time.Second})
	var spans []time.Duration
	for i := 0; i < 60000; i++ {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		if _, due := c.Take(now, "a:1", "r"); due != nil {
			spans = append(spans, due.Last.Sub(due.First).Round(time.Second))
		}
	}
	want := []time.Duration{1, 2, 4, 8, 8, 8, 8}
	if len(spans) < len(want) {
		t.Fatalf("got windows %v, want at least %v seconds", spans, want)
	}
	for i, w := range want {
		if spans[i] != w*time.Second {
			t.Fatalf("window %d lasted %v, want %v (all: %v)", i, spans[i], w*time.Second, spans)
		}
	}
}
