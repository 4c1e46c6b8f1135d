//go:build linux

package cgroup

import (
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// BenchmarkGroup is a box's cgroup cost: New with the limits of the default
// policy, Start of /bin/true in it, Close after it exited, against the same
// start with no group, the two alternating so the host's load weighs on both.
// It reports the medians of each phase and the ratio of the whole to the plain
// start, and the Start of a group Place readied (placed-start-ms: what is
// left on the caller's path when it places the thread beside other work).
func BenchmarkGroup(b *testing.B) {
	i := Detect()
	if i.Version == 0 || !i.Has(Memory) || !i.Has(CPU) || !i.Has(Pids) {
		testsupport.Missing(b, "no usable cgroup with memory, cpu and pids: %s", i.Reason)
	}
	l := Limits{MemoryBytes: 2 << 30, CPU: 1, Pids: 512}
	run := func(g *Group) {
		attr := &os.ProcAttr{Sys: nil}
		start := func() error {
			p, err := os.StartProcess("/bin/true", []string{"true"}, attr)
			if err == nil {
				_, err = p.Wait()
			}
			return err
		}
		var err error
		if g == nil {
			err = start()
		} else {
			err = g.Start(nil, start)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	var plain, made, started, closed, whole, placed []time.Duration
	for n := 0; n < b.N; n++ {
		t0 := time.Now()
		run(nil)
		plain = append(plain, time.Since(t0))

		t0 = time.Now()
		g, err := i.New(fmt.Sprintf("bench-%d-%d", os.Getpid(), n), l)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		run(g)
		t2 := time.Now()
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		made, started, closed, whole = append(made, t1.Sub(t0)), append(started, t2.Sub(t1)), append(closed, t3.Sub(t2)), append(whole, t3.Sub(t0))

		g, err = i.New(fmt.Sprintf("bench-%d-%d-placed", os.Getpid(), n), l)
		if err != nil {
			b.Fatal(err)
		}
		g.Place()
		// The caller's other work meanwhile, about the time a box's plan
		// takes: Place returns before its thread is in.
		time.Sleep(2 * time.Millisecond)
		t0 = time.Now()
		run(g)
		placed = append(placed, time.Since(t0))
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
	}
	ms := func(ds []time.Duration) float64 {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	b.ReportMetric(ms(plain), "plain-ms")
	b.ReportMetric(ms(made), "new-ms")
	b.ReportMetric(ms(started), "start-ms")
	b.ReportMetric(ms(placed), "placed-start-ms")
	b.ReportMetric(ms(closed), "close-ms")
	b.ReportMetric(ms(whole)/ms(plain), "ratio")
}
