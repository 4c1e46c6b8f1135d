package fit

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCountVsExact times Count and cl100k_base's byte-pair encoding
// over the same samples (the corpus and the wide corpus, one call a sample,
// as tool results come) in one process, and reports how many times faster
// the estimate is:
//
//	go test ./fit -run '^$' -bench CountVsExact -benchtime 5x
//
// Both are timed by the CPU time of the one thread they run on, so other
// load on the machine does not skew the ratio. It fails when the estimate is
// not at least minSpeedup times as fast over at least minPasses passes.
func BenchmarkCountVsExact(b *testing.B) {
	samples := append(loadCorpus(b), loadWide(b)...)
	size := 0
	for _, s := range samples {
		size += len(s.text)
	}
	c := exactCodec(b)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := c.Count(samples[0].text); err != nil { // load the vocabulary
		b.Fatal(err)
	}
	// Count's own tables are built on first use too: neither side's
	// one-time set-up is timed (the first, one-iteration round of a
	// benchmark would otherwise judge the estimate by its set-up).
	Count(samples[0].text)
	b.SetBytes(int64(size))
	var est, exact time.Duration
	for b.Loop() {
		t0 := threadCPU(b)
		for _, s := range samples {
			Count(s.text)
		}
		t1 := threadCPU(b)
		for _, s := range samples {
			if _, err := c.Count(s.text); err != nil {
				b.Fatal(err)
			}
		}
		est += t1 - t0
		exact += threadCPU(b) - t1
	}
	ratio := float64(exact) / float64(max(est, 1))
	mbs := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(ratio, "x-faster")
	b.Logf("%d samples, %d bytes: Count %.1f MB/s, cl100k %.1f MB/s (CPU time): Count is %.1fx faster",
		len(samples), size, mbs(est), mbs(exact), ratio)
	// Judged on a run of several passes only: go test first calls a
	// benchmark for one pass to size it, and one pass of the exact
	// tokenizer swings by a quarter with where its garbage is collected.
	if b.N >= minPasses && ratio < minSpeedup {
		b.Errorf("Count is %.1f times as fast as the exact tokenizer, want at least %d", ratio, minSpeedup)
	}
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// minSpeedup is how many times faster than the exact tokenizer Count must be.
const minSpeedup = 20

// minPasses is how many passes a run needs before its ratio is judged.
const minPasses = 3
