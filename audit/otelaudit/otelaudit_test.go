package otelaudit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/airlock-run/airlock/audit"
)

// The SDK reads its default resource once per process: the environment
// SpanWriter must read alike is set before any test makes a provider.
func TestMain(m *testing.M) {
	os.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci%20box, team = sec,broken,service.name=from-attrs")
	os.Unsetenv("OTEL_SERVICE_NAME")
	os.Unsetenv("OTEL_TRACES_SAMPLER")
	os.Exit(m.Run())
}

func openLog(t *testing.T) *audit.Log {
	t.Helper()
	tick := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	l, err := audit.Open(filepath.Join(t.TempDir(), "state", "audit.jsonl"), audit.Options{Now: func() time.Time {
		tick = tick.Add(time.Second)
		return tick
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestTracedEmitsSpanPerRecord(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	l := openLog(t)
	sink := Traced(l, tp.Tracer("airlock/audit"))
	if err := sink.Append(audit.Record{Kind: "decision", Verdict: "deny"}); err != nil {
		t.Fatal(err)
	}
	if err := sink.Append(audit.Record{Kind: "egress", Decider: "policy", Fields: map[string]any{"bytes": int64(42), "host": "example.com"}}); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	_, head := l.Head()
	want := map[attribute.Key]attribute.Value{
		"airlock.kind":        attribute.StringValue("egress"),
		"airlock.seq":         attribute.Int64Value(2),
		"airlock.hash":        attribute.StringValue(head),
		"airlock.decider":     attribute.StringValue("policy"),
		"airlock.field.bytes": attribute.Int64Value(42),
		"airlock.field.host":  attribute.StringValue("example.com"),
	}
	s := spans[1]
	if s.Name != "airlock.egress" {
		t.Errorf("span name: got %q, want airlock.egress", s.Name)
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		got[kv.Key] = kv.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s: got %v, want %v", k, got[k].Emit(), v.Emit())
		}
	}
}

func TestTracedMarksFailure(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	l := openLog(t)
	l.Close()
	if err := Traced(l, tp.Tracer("t")).Append(audit.Record{Kind: "run"}); err == nil {
		t.Fatal("append to a closed log: got no error")
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Status.Code != codes.Error {
		t.Fatalf("got %+v, want one span with an error status", spans)
	}
}

// records are what TestSpanWriterMatchesSDK writes both ways: every kind
// of field, a record without a time, one over the attribute limit.
func records() []audit.Record {
	big := map[string]any{}
	for i := range 150 {
		big[fmt.Sprintf("f%03d", i)] = i
	}
	at := time.Date(2025, 6, 7, 8, 9, 10, 11, time.UTC)
	return []audit.Record{
		{Kind: "decision", Time: at, CallDigest: strings.Repeat("a", 64), Verdict: "deny", Rule: "shell.deny[0]",
			Reason: "refused <&>\u2028", Decider: "policy",
			Fields: map[string]any{"argv": []string{"git", "push"}, "n": 3, "big": int64(9007199254740993), "ok": false,
				"ratio": 0.25, "s": "x\"y", "obj": struct{ A int }{1}}},
		{Kind: "egress", Fields: map[string]any{"host": "example.com"}},
		{Kind: "big", Time: at.Add(time.Hour), Fields: big},
	}
}

// normalised is a span with what differs between any two runs (its IDs
// and end time; the start and event times of records without a time)
// replaced, and the rest as the exporter wrote it.
func normalised(t *testing.T, out string) []string {
	t.Helper()
	var spans []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("span %q: %v", line, err)
		}
		sc := m["SpanContext"].(map[string]any)
		for _, k := range []string{"TraceID", "SpanID"} {
			if id, _ := sc[k].(string); strings.Trim(id, "0") == "" {
				t.Errorf("span %s: %s %q is not set", m["Name"], k, id)
			}
			sc[k] = "id"
		}
		m["EndTime"] = "end"
		if m["Name"] == "airlock.egress" || m["Name"] == "airlock.closed" {
			m["StartTime"] = "now"
		}
		if evs, ok := m["Events"].([]any); ok {
			for _, e := range evs {
				e.(map[string]any)["Time"] = "now"
			}
		}
		b, _ := json.MarshalIndent(m, "", " ")
		spans = append(spans, string(b))
	}
	return spans
}

// TestSpanWriterMatchesSDK writes the same records through the SDK's
// default provider with its stdout exporter (what airlock's trace file
// was) and through audit.SpanWriter, and wants the same spans but for
// their random IDs and the clock.
func TestSpanWriterMatchesSDK(t *testing.T) {
	var want, got bytes.Buffer
	exp, err := stdouttrace.New(stdouttrace.WithWriter(&want))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	sdkSink := Traced(openLog(t), tp.Tracer("github.com/airlock-run/airlock/audit"))
	sw, stop, err := audit.WriterTracing(&got)
	if err != nil {
		t.Fatal(err)
	}
	ownSink := audit.Traced(openLog(t), sw)
	for _, r := range records() {
		if err := sdkSink.Append(r); err != nil {
			t.Fatal(err)
		}
		if err := ownSink.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	// A record the log refuses: the error status and exception event.
	closed := openLog(t)
	closed.Close()
	Traced(closed, tp.Tracer("github.com/airlock-run/airlock/audit")).Append(audit.Record{Kind: "closed"})
	audit.Traced(closed, sw).Append(audit.Record{Kind: "closed"})
	tp.Shutdown(t.Context())
	stop(t.Context())

	w, g := normalised(t, want.String()), normalised(t, got.String())
	if len(w) != len(records())+1 || len(g) != len(w) {
		t.Fatalf("got %d spans, the SDK %d; want %d", len(g), len(w), len(records())+1)
	}
	for i := range w {
		if g[i] != w[i] {
			t.Errorf("span %d:\ngot  %s\nwant %s (the SDK's)", i, g[i], w[i])
		}
	}
	if !strings.Contains(want.String(), `"telemetry.sdk.version","Value":{"Type":"STRING","Value":"`+sdk.Version()+`"`) {
		t.Errorf("the SDK's spans do not name its version %s", sdk.Version())
	}
}
