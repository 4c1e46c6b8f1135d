// Package otelaudit emits audit records as spans through an OpenTelemetry
// tracer a program brings: audit.Traced's spans, for a tracer with an
// exporter of the program's choosing. The airlock binary does not import
// it (it writes its trace file with audit.SpanWriter, without the SDK);
// programs built on the packages that have a tracer provider may.
package otelaudit

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlock-run/airlock/audit"
)

// Traced returns a Sink that passes every record to next and also emits
// one span for it through tracer, named "airlock.<kind>", starting at the
// record's time and carrying its fields as attributes
// (audit.SpanAttributes). When next is an audit.Writer the span also
// carries the record's sequence number and hash, tying the trace to the
// log.
//
// Sink.Append has no context, so the spans are roots of their own traces.
func Traced(next audit.Sink, tracer trace.Tracer) audit.Sink {
	return &traced{next: next, tracer: tracer}
}

type traced struct {
	next   audit.Sink
	tracer trace.Tracer
}

func (t *traced) Append(r audit.Record) error {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	if !r.Time.IsZero() {
		opts = append(opts, trace.WithTimestamp(r.Time))
	}
	_, span := t.tracer.Start(context.Background(), "airlock."+r.Kind, opts...)
	defer span.End()
	var err error
	if w, ok := t.next.(audit.Writer); ok {
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

// attributes are audit.SpanAttributes as OpenTelemetry's.
func attributes(r audit.Record) []attribute.KeyValue {
	var kv []attribute.KeyValue
	for _, a := range audit.SpanAttributes(r) {
		k := attribute.Key(a.Key)
		switch v := a.Value.Value.(type) {
		case string:
			kv = append(kv, k.String(v))
		case bool:
			kv = append(kv, k.Bool(v))
		case int64:
			kv = append(kv, k.Int64(v))
		case float64:
			kv = append(kv, k.Float64(v))
		}
	}
	return kv
}
