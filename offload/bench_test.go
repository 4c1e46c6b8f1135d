package offload

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/fit"
)

// fiveMiB builds a 5 MiB Markdown result, the kind of page a tool returns.
func fiveMiB() string {
	var b strings.Builder
	for i := 0; b.Len() < 5<<20; i++ {
		fmt.Fprintf(&b, "## Section %d\n\nSection %d explains one more detail of the system under test.\n\n", i, i)
		for j := 0; j < 20; j++ {
			fmt.Fprintf(&b, "line %d.%d: the value of counter %d rose to %d after the retry\n", i, j, j, i*j)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// BenchmarkOffload5MiB offloads a 5 MiB result end to end (the size check,
// the weighing, keeping the file, the outline and the stub) and reads a
// section back. As a baseline in the same run it times what the mediator
// does to any result of that size anyway: encoding it as JSON. The metric
// offload/json is how many JSON encodings one offload costs.
func BenchmarkOffload5MiB(b *testing.B) {
	text := fiveMiB()
	st := newStore(b)
	o := &Offloader{Store: st, Threshold: DefaultThreshold}
	var tJSON, tOff, tRead time.Duration
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A different result each round, so no write is skipped.
		t := fmt.Sprintf("round %d\n", i) + text
		t0 := time.Now()
		if _, err := json.Marshal(map[string]string{"text": t}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		out, err := o.Offload(ctx, files.Scope{Tenant: "acme", Tree: "bench"}, "acme.get_page", t)
		if err != nil || out.Stub == nil {
			b.Fatalf("offload: %v", err)
		}
		t2 := time.Now()
		res, err := ReadResult(ctx, st, files.Scope{Tenant: "acme", Tree: "bench"}, Args{Ref: out.Stub.Offloaded.Ref, Section: "Section 100"})
		if err != nil || res.Note.View != fit.Section {
			b.Fatalf("read back: %v %+v", err, res.Note)
		}
		t3 := time.Now()
		tJSON += t1.Sub(t0)
		tOff += t2.Sub(t1)
		tRead += t3.Sub(t2)
	}
	b.ReportMetric(float64(tOff.Milliseconds())/float64(b.N), "offload-ms")
	b.ReportMetric(float64(tRead.Milliseconds())/float64(b.N), "read-section-ms")
	b.ReportMetric(float64(tOff)/float64(tJSON), "offload/json")
}
