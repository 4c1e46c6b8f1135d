package audit

import (
	"bytes"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestTracedEmitsSpanPerRecord(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	l, _ := openTemp(t)
	sink := Traced(l, tp.Tracer("airlock/audit"))
	if err := sink.Append(sample(1)); err != nil {
		t.Fatal(err)
	}
	if err := sink.Append(Record{Kind: "egress", Decider: "policy", Fields: map[string]any{"bytes": int64(42), "host": "example.com"}}); err != nil {
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
	if spans[0].Name != "airlock.decision" || spans[0].StartTime.IsZero() {
		t.Errorf("first span: got %q at %v", spans[0].Name, spans[0].StartTime)
	}
}

func TestTracedMarksFailure(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())
	l, _ := openTemp(t)
	l.Close()
	if err := Traced(l, tp.Tracer("t")).Append(Record{Kind: "run"}); err == nil {
		t.Fatal("append to a closed log: got no error")
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Status.Code != codes.Error {
		t.Fatalf("got %+v, want one span with an error status", spans)
	}
}

func TestWriterTracing(t *testing.T) {
	var buf bytes.Buffer
	tracer, shutdown, err := WriterTracing(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := openTemp(t)
	if err := Traced(l, tracer).Append(Record{Kind: "run", Decider: "policy", Fields: map[string]any{"exit": 0}}); err != nil {
		t.Fatal(err)
	}
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	var span struct {
		Name       string
		Attributes []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &span); err != nil {
		t.Fatalf("exported span %q: %v", buf.String(), err)
	}
	got := map[string]any{}
	for _, a := range span.Attributes {
		got[a.Key] = a.Value.Value
	}
	if span.Name != "airlock.run" || got["airlock.decider"] != "policy" || got["airlock.seq"] != float64(1) {
		t.Errorf("got span %s with %v", span.Name, got)
	}
}
