package files

import (
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkStore32MiB compares keeping and fetching a 32 MiB file with a
// plain durable copy of it on the same disk, in the same run: copy reads the
// source and writes and flushes the destination; put reads the source into
// the store; get reads it out of the store into a flushed file. The metrics
// put/copy and get/copy are speeds relative to the copy (1 = as fast).
func BenchmarkStore32MiB(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	data := randomBytes(b, MaxSize)
	if err := os.WriteFile(src, data, 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "store"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sc := Scope{Tenant: "acme", Tree: "bench"}
	var tCopy, tPut, tGet time.Duration
	var putRatio, getRatio []float64
	b.SetBytes(MaxSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Change the content each round so the store cannot skip the write,
		// and flush the source so its write-back does not land inside a
		// timed step.
		data[0], data[1] = byte(i), byte(i>>8)
		if err := writeFlushed(src, data); err != nil {
			b.Fatal(err)
		}
		var copyTime time.Duration
		copyStep := func() {
			t0 := time.Now()
			if err := durableCopy(src, filepath.Join(dir, "copy")); err != nil {
				b.Fatal(err)
			}
			copyTime = time.Since(t0)
			tCopy += copyTime
		}
		// Alternate which goes first, so neither always meets the other's
		// write-back.
		if i%2 == 0 {
			copyStep()
		}
		t1 := time.Now()
		fh, err := os.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.PutReader(ctx, sc, fh)
		fh.Close()
		if err != nil {
			b.Fatal(err)
		}
		putTime := time.Since(t1)
		tPut += putTime
		if i%2 == 1 {
			copyStep()
		}
		t2 := time.Now()
		out, err := os.Create(filepath.Join(dir, "out"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.GetTo(ctx, sc, r, out); err != nil {
			b.Fatal(err)
		}
		if err := out.Sync(); err != nil {
			b.Fatal(err)
		}
		out.Close()
		getTime := time.Since(t2)
		tGet += getTime
		// Each round's copy, put and get run back to back, under the same
		// conditions; the median of the rounds' ratios resists bursts of
		// load from other processes on a shared machine.
		putRatio = append(putRatio, float64(copyTime)/float64(putTime))
		getRatio = append(getRatio, float64(copyTime)/float64(getTime))
	}
	b.ReportMetric(float64(tCopy)/float64(tPut), "put/copy")
	b.ReportMetric(float64(tCopy)/float64(tGet), "get/copy")
	b.ReportMetric(median(putRatio), "put/copy-median")
	b.ReportMetric(median(getRatio), "get/copy-median")
	b.ReportMetric(float64(tCopy.Milliseconds())/float64(b.N), "copy-ms")
}

func durableCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func writeFlushed(dst string, data []byte) error {
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := out.Write(data); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
