package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Writer is a Sink that also returns the record as stored (with its Seq
// and Hash). *Log is one.
type Writer interface {
	Sink
	Write(Record) (Record, error)
}

var _ Writer = (*Log)(nil)

// Write is Append returning the stored record.
func (l *Log) Write(r Record) (Record, error) { return l.append(r, false, nil) }

// Traced returns a Sink that passes every record to next and also emits
// one OpenTelemetry span for it through tracer, named "airlock.<kind>",
// starting at the record's time and carrying its fields as attributes. Use
// it only when an exporter is configured; without one, give the parts next
// itself. When next is a Writer the span also carries the record's sequence
// number and hash, tying the trace to the log.
//
// Sink.Append has no context, so the spans are roots of their own traces.
func Traced(next Sink, tracer trace.Tracer) Sink {
	return &traced{next: next, tracer: tracer}
}

type traced struct {
	next   Sink
	tracer trace.Tracer
}

func (t *traced) Append(r Record) error {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	if !r.Time.IsZero() {
		opts = append(opts, trace.WithTimestamp(r.Time))
	}
	_, span := t.tracer.Start(context.Background(), "airlock."+r.Kind, opts...)
	defer span.End()
	var err error
	if w, ok := t.next.(Writer); ok {
		r, err = w.Write(r)
	} else {
		err = t.next.Append(r)
	}
	span.SetAttributes(attributes(r)...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "audit record not written")
	}
	return err
}

// attributes turns a record into span attributes. Fields are flattened one
// level: scalars as they are, anything else as its JSON text.
func attributes(r Record) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.String("airlock.kind", r.Kind)}
	str := func(k, v string) {
		if v != "" {
			kv = append(kv, attribute.String(k, v))
		}
	}
	if r.Seq != 0 {
		kv = append(kv, attribute.Int64("airlock.seq", r.Seq))
	}
	str("airlock.hash", r.Hash)
	str("airlock.call_digest", r.CallDigest)
	str("airlock.verdict", r.Verdict)
	str("airlock.rule", r.Rule)
	str("airlock.reason", r.Reason)
	str("airlock.decider", r.Decider)
	keys := make([]string, 0, len(r.Fields))
	for k := range r.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := "airlock.field." + k
		switch v := r.Fields[k].(type) {
		case string:
			kv = append(kv, attribute.String(name, v))
		case bool:
			kv = append(kv, attribute.Bool(name, v))
		case int:
			kv = append(kv, attribute.Int(name, v))
		case int64:
			kv = append(kv, attribute.Int64(name, v))
		case float64:
			kv = append(kv, attribute.Float64(name, v))
		default:
			if b, err := json.Marshal(v); err == nil {
				kv = append(kv, attribute.String(name, string(b)))
			}
		}
	}
	return kv
}

// WriterTracing returns a tracer whose spans are written to w as JSON, one
// object per span, as soon as each ends (the OpenTelemetry stdout
// exporter), and the function that flushes and stops it. It is the
// exporter airlock can configure without a collector: wire it when the user
// asks for spans (for instance OTEL_TRACES_EXPORTER=console) and pass the
// tracer to Traced.
func WriterTracing(w io.Writer) (trace.Tracer, func(context.Context) error, error) {
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return nil, nil, fmt.Errorf("audit: span exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return tp.Tracer("github.com/airlock-run/airlock/audit"), tp.Shutdown, nil
}
