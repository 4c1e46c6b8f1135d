package warmrun

import (
	"os"
	"testing"
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
}

// BenchmarkOwnFacts is the cost of the server's own facts, read for every
// call beside the caller's.
func BenchmarkOwnFacts(b *testing.B) {
	for b.Loop() {
		if _, err := readFacts(0); err != nil {
			b.Fatal(err)
		}
	}
}
