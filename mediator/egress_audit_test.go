package mediator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/policy"
)

// logRecorder keeps the kernel's records in a real hash-chained log, as
// the wiring does, so what is measured is bytes on disk.
type logRecorder struct{ l *audit.Log }

func (r logRecorder) Record(_ context.Context, rec Record) error {
	fields := map[string]any{"category": rec.Category}
	for k, v := range rec.Fields {
		fields[k] = v
	}
	return r.l.Append(audit.Record{Kind: rec.Kind, Time: rec.Time, CallDigest: rec.CallDigest,
		Verdict: rec.Verdict.String(), Rule: rec.Rule, Reason: rec.Reason, Decider: rec.Decider, Fields: fields})
}

// floodKernel is a kernel whose records go to a fresh audit log; size
// reports the log's bytes.
func floodKernel(tb testing.TB) (k *Kernel, l *audit.Log, size func() int64) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	p, err := policy.Parse("test.yaml", []byte(testPolicy))
	if err != nil {
		tb.Fatal(err)
	}
	w := policy.World{Workdir: tb.TempDir(), Home: "/home/someone", PATH: []string{"/usr/bin", "/bin"},
		LookPath: func(name string) (string, error) { return "/usr/bin/" + name, nil }}
	k, err = New(p, w, Options{Recorder: logRecorder{l}})
	if err != nil {
		tb.Fatal(err)
	}
	return k, l, func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			tb.Fatal(err)
		}
		return st.Size()
	}
}

// refusal is the i-th refused connection of a flood at rate per second
// from t0, to one of distinct destinations.
func refusal(i, rate, distinct int, t0 time.Time) egress.Event {
	d := i % distinct
	return egress.Event{Box: "b0x", Proto: "connect", Host: fmt.Sprintf("10.%d.%d.%d", d>>16&255, d>>8&255, d&255), Port: 443,
		Reason: "this destination is not in the policy's net.allow list",
		Start:  t0.Add(time.Duration(i) * time.Second / time.Duration(rate))}
}

var floodStart = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// TestEgressFloodIsBounded: the flood seen from a box — 2,152 refused
// connections in 5 s — recorded one record per refusal (the old hook)
// appends over a megabyte to the host's log; through the hook it appends
// a bounded amount, and the counted records still account for every
// refusal and every destination.
func TestEgressFloodIsBounded(t *testing.T) {
	const n, rate, distinct = 2152, 430, 200
	call := Call{Kind: KindExec, Argv: []string{"curl"}}

	// The old shape: every refusal a record of its own.
	kOld, _, sizeOld := floodKernel(t)
	for i := 0; i < n; i++ {
		e := refusal(i, rate, distinct, floodStart)
		if err := kOld.record(context.Background(), Record{Kind: "egress", Time: e.Start, CallDigest: call.Digest(),
			Reason: e.Reason, Decider: "egress", Fields: map[string]any{"event": e}}); err != nil {
			t.Fatal(err)
		}
	}
	if sizeOld() < 1<<20 {
		t.Fatalf("one record per refusal appended only %d bytes; the flood does not show the problem", sizeOld())
	}

	k, _, size := floodKernel(t)
	hook, flush := k.egressAudit(context.Background(), call)
	for i := 0; i < n; i++ {
		if err := hook(refusal(i, rate, distinct, floodStart)); err != nil {
			t.Fatal(err)
		}
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	const bound = 128 << 10
	if got := size(); got > bound {
		t.Fatalf("the flood appended %d bytes, want at most %d (one record per refusal: %d)", got, bound, sizeOld())
	}
	t.Logf("%d refusals: %d bytes one by one, %d bytes coalesced", n, sizeOld(), size())
	checkAccounted(t, k, n, distinct)
}

// checkAccounted reads the log back: every refusal is a record of its own
// or counted in a summary, and every destination is named.
func checkAccounted(t *testing.T, k *Kernel, n, distinct int) {
	t.Helper()
	rec := k.recorder.(logRecorder)
	data, err := os.ReadFile(rec.l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(bytes.NewReader(data)); err != nil || !rep.OK {
		t.Fatalf("the log does not verify: %+v %v", rep, err)
	}
	var one, counted int64
	dests := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r struct {
			Kind   string         `json:"kind"`
			Fields map[string]any `json:"fields"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		switch r.Kind {
		case "egress":
			one++
			ev := r.Fields["event"].(map[string]any)
			dests[fmt.Sprintf("connect %s:443", ev["host"])] = true
		case "egress.coalesced":
			s := r.Fields["coalesced"].(map[string]any)
			c, _ := s["count"].(json.Number).Int64()
			counted += c
			for d := range s["destinations"].(map[string]any) {
				dests[d] = true
			}
			if s["overflow"] != nil {
				t.Errorf("a summary overflowed with %d destinations", distinct)
			}
		}
	}
	if one+counted != int64(n) {
		t.Fatalf("%d recorded + %d counted, want %d refusals", one, counted, n)
	}
	if len(dests) != distinct {
		t.Fatalf("%d destinations named, want %d", len(dests), distinct)
	}
}

// TestEgressAuditFailsClosed: an allowed connection whose record cannot
// be written is the hook's error, coalescing or not.
func TestEgressAuditFailsClosed(t *testing.T) {
	boom := errors.New("disk full")
	k := newKernel(t, testPolicy, Options{Recorder: &memRecorder{fail: boom}})
	hook, _ := k.egressAudit(context.Background(), Call{Kind: KindExec, Argv: []string{"curl"}})
	for i := 0; i < 100; i++ {
		if err := hook(refusal(i, 1000, 1, floodStart)); err != nil {
			break
		}
	}
	err := hook(egress.Event{Proto: "connect", Host: "example.com", Port: 443, Allow: true, Opened: true, Start: floodStart})
	if !errors.Is(err, boom) {
		t.Fatalf("allowed connection with a failing log: got %v, want the log's error", err)
	}
}

// BenchmarkEgressFlood drives the hook with a 5-minute flood at 430
// refused connections a second (the rate seen from a box) at a virtual
// clock, into a real log, and reports the bytes appended per refused
// connection and in all.
func BenchmarkEgressFlood(b *testing.B) {
	const rate, seconds, distinct = 430, 300, 1000
	n := rate * seconds
	var total int64
	for b.Loop() {
		k, _, size := floodKernel(b)
		hook, flush := k.egressAudit(context.Background(), Call{Kind: KindExec, Argv: []string{"curl"}})
		for i := 0; i < n; i++ {
			if err := hook(refusal(i, rate, distinct, floodStart)); err != nil {
				b.Fatal(err)
			}
		}
		if err := flush(); err != nil {
			b.Fatal(err)
		}
		total = size()
	}
	b.ReportMetric(float64(total), "bytes/flood")
	b.ReportMetric(float64(total)/float64(n), "bytes/refusal")
}
