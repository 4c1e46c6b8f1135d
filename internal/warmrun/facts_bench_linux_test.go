package warmrun

import (
	"os"
	"testing"
)

// BenchmarkCallerFacts is the cost of what the server reads of a caller
// before it answers: its namespaces and its facts, its terminal among them (this
// process standing for the caller).
func BenchmarkCallerFacts(b *testing.B) {
	self, err := readFacts(0)
	if err != nil {
		b.Fatal(err)
	}
	pid := os.Getpid()
	for b.Loop() {
		if ns := sameNamespaces(pid, "user", "pid", "mnt"); ns != "" {
			b.Fatalf("another %s namespace", ns)
		}
		theirs, err := readFacts(pid)
		if err != nil {
			b.Fatal(err)
		}
		if r := self.differ(theirs, nil); r != "" {
			b.Fatal(r)
		}
	}
}
