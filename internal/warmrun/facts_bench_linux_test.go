package warmrun

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkCallerFacts is the cost of what the server reads of a caller
// before it answers: its namespaces, its facts, its working directory and
// its terminal (this process standing for the caller), and the comparison.
func BenchmarkCallerFacts(b *testing.B) {
	self, err := readFacts(0)
	if err != nil {
		b.Fatal(err)
	}
	pid := os.Getpid()
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime(b)
	for b.Loop() {
		if ns := sameNamespaces(pid, "user", "pid"); ns != "" {
			b.Fatalf("another %s namespace", ns)
		}
		theirs, err := readCaller(pid)
		if err != nil {
			b.Fatal(err)
		}
		if r := self.differ(theirs.facts, nil); r != "" {
			b.Fatal(r)
		}
		if err := sameDir(theirs.cwd, wd); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkOwnFacts is the cost of the server's own facts, read for every
// call beside the caller's.
func BenchmarkOwnFacts(b *testing.B) {
	cpu0 := cpuTime(b)
	for b.Loop() {
		if _, err := readFacts(0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkHandOver is one whole hand-over to a server in this process
// whose handler runs nothing: the connection, the request, the server's
// reads and checks of the caller (this process), the challenge, the
// answer and the exit code.
func BenchmarkHandOver(b *testing.B) {
	dir := serveWith(b, Handler{Run: func(context.Context, *Call) int { return 7 }})
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Args: []string{"--", "true"}, Env: os.Environ(), Dir: wd}
	// The time on the processor of both ends, less the noise of others'
	// work on a shared machine than the time it took.
	cpu0 := cpuTime(b)
	for b.Loop() {
		if r := HandOver(context.Background(), dir, req, []int{0, 1, 2}); r.Outcome != Ran || r.Code != 7 {
			b.Fatalf("got %+v, want the call run", r)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is this process's time on the processor, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
