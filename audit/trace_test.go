package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// exported is one span as SpanWriter writes it, the parts the tests read.
type exported struct {
	Name        string
	SpanContext struct{ TraceID, SpanID, TraceFlags string }
	StartTime   time.Time
	EndTime     time.Time
	Attributes  []struct {
		Key   string
		Value struct {
			Type  string
			Value any
		}
	}
	Events []struct {
		Name       string
		Attributes []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	Status            struct{ Code, Description string }
	DroppedAttributes int
	Resource          []struct {
		Key   string
		Value struct{ Value any }
	}
}

func (e exported) attr(k string) any {
	for _, a := range e.Attributes {
		if a.Key == k {
			return a.Value.Value
		}
	}
	return nil
}

// spansOf reads the spans written to buf, one JSON object a line.
func spansOf(t *testing.T, buf *bytes.Buffer) []exported {
	t.Helper()
	var out []exported
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var s exported
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("span %q: %v", line, err)
		}
		out = append(out, s)
	}
	return out
}

func writerTracing(t *testing.T) (*SpanWriter, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	w, shutdown, err := WriterTracing(&buf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t.Context()) })
	return w, &buf
}

func TestTracedWritesSpanPerRecord(t *testing.T) {
	w, buf := writerTracing(t)
	l, _ := openTemp(t)
	sink := Traced(l, w)
	if err := sink.Append(sample(1)); err != nil {
		t.Fatal(err)
	}
	if err := sink.Append(Record{Kind: "egress", Decider: "policy", Fields: map[string]any{"bytes": int64(42), "host": "example.com", "ok": true, "ratio": 0.5}}); err != nil {
		t.Fatal(err)
	}
	spans := spansOf(t, buf)
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	_, head := l.Head()
	s := spans[1]
	want := map[string]any{
		"airlock.kind": "egress", "airlock.seq": float64(2), "airlock.hash": head, "airlock.decider": "policy",
		"airlock.field.bytes": float64(42), "airlock.field.host": "example.com", "airlock.field.ok": true, "airlock.field.ratio": 0.5,
	}
	if s.Name != "airlock.egress" {
		t.Errorf("span name: got %q, want airlock.egress", s.Name)
	}
	for k, v := range want {
		if got := s.attr(k); got != v {
			t.Errorf("attribute %s: got %v, want %v", k, got, v)
		}
	}
	if s.Status.Code != "Unset" || len(s.Events) != 0 {
		t.Errorf("status %+v, events %+v: want Unset and none", s.Status, s.Events)
	}
	if len(s.SpanContext.TraceID) != 32 || len(s.SpanContext.SpanID) != 16 || s.SpanContext.TraceFlags != "01" ||
		s.SpanContext.TraceID == spans[0].SpanContext.TraceID {
		t.Errorf("span context %+v: want a sampled root of its own trace", s.SpanContext)
	}
	if spans[0].Name != "airlock.decision" || spans[0].StartTime.IsZero() || spans[0].EndTime.Before(spans[0].StartTime) {
		t.Errorf("first span: got %q from %v to %v", spans[0].Name, spans[0].StartTime, spans[0].EndTime)
	}
}

func TestTracedMarksFailure(t *testing.T) {
	w, buf := writerTracing(t)
	l, _ := openTemp(t)
	l.Close()
	if err := Traced(l, w).Append(Record{Kind: "run"}); err == nil {
		t.Fatal("append to a closed log: got no error")
	}
	spans := spansOf(t, buf)
	if len(spans) != 1 || spans[0].Status.Code != "Error" || len(spans[0].Events) != 1 || spans[0].Events[0].Name != "exception" {
		t.Fatalf("got %+v, want one span with an error status and its exception", spans)
	}
}

func TestWriterTracingStops(t *testing.T) {
	var buf bytes.Buffer
	w, shutdown, err := WriterTracing(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := openTemp(t)
	if err := Traced(l, w).Append(Record{Kind: "run", Decider: "policy", Fields: map[string]any{"exit": 0}}); err != nil {
		t.Fatal(err)
	}
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := Traced(l, w).Append(Record{Kind: "after"}); err != nil {
		t.Fatal(err)
	}
	spans := spansOf(t, &buf)
	if len(spans) != 1 || spans[0].Name != "airlock.run" || spans[0].attr("airlock.decider") != "policy" || spans[0].attr("airlock.seq") != float64(1) {
		t.Errorf("got %+v, want the one span written before the shutdown", spans)
	}
}

func TestSpanWriterLimitsAttributes(t *testing.T) {
	w, buf := writerTracing(t)
	fields := map[string]any{}
	for i := range 200 {
		fields[fmt.Sprintf("f%03d", i)] = i
	}
	l, _ := openTemp(t)
	if err := Traced(l, w).Append(Record{Kind: "big", Fields: fields}); err != nil {
		t.Fatal(err)
	}
	s := spansOf(t, buf)[0]
	// kind, seq, hash and the fields
	if all := 3 + len(fields); len(s.Attributes) != maxSpanAttributes || s.DroppedAttributes != all-maxSpanAttributes {
		t.Errorf("got %d attributes, %d dropped; want %d and %d", len(s.Attributes), s.DroppedAttributes, maxSpanAttributes, all-maxSpanAttributes)
	}
}

func TestRootSampler(t *testing.T) {
	var low, high [16]byte
	high[8] = 0xff
	tests := []struct {
		name              string
		env               map[string]string
		wantLow, wantHigh bool
	}{
		{"unset", nil, true, true},
		{"always off", map[string]string{"OTEL_TRACES_SAMPLER": " Always_Off "}, false, false},
		{"parent-based off", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, false, false},
		{"half", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": " 0.5 "}, true, false},
		{"none", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, false, false},
		{"invalid ratio is one", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, true, true},
		{"unknown sampler is the default", map[string]string{"OTEL_TRACES_SAMPLER": "jaeger_remote"}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := rootSampler(func(k string) string { return tt.env[k] })
			if got := s(low); got != tt.wantLow {
				t.Errorf("low trace ID: got %v, want %v", got, tt.wantLow)
			}
			if got := s(high); got != tt.wantHigh {
				t.Errorf("high trace ID: got %v, want %v", got, tt.wantHigh)
			}
		})
	}
}
