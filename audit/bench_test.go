package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkAppend measures a durable append (write + fsync + flock); the
// Encode benchmark in the same run is the baseline without the disk.
func BenchmarkAppend(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := sample(1)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	r := sample(1)
	r.Seq = 1
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := encode(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		l.Append(sample(i))
	}
	l.Close()
	data, _ := os.ReadFile(path)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if rep, _ := Verify(bytes.NewReader(data)); !rep.OK {
			b.Fatal("not OK")
		}
	}
}
