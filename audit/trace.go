package audit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
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

// Traced returns a Sink that passes every record to next and also writes
// one span for it to spans, named "airlock.<kind>", starting at the
// record's time and carrying its fields as attributes (SpanAttributes).
// When next is a Writer the span also carries the record's sequence number
// and hash, tying the trace to the log. A record next refuses gets an
// error status and an exception event, as an OpenTelemetry span would.
//
// Sink.Append has no context, so the spans are roots of their own traces.
// A program with an OpenTelemetry tracer of its own passes it to
// audit/otelaudit's Traced instead.
func Traced(next Sink, spans *SpanWriter) Sink {
	return &traced{next: next, spans: spans}
}

type traced struct {
	next  Sink
	spans *SpanWriter
}

func (t *traced) Append(r Record) error {
	s := t.spans.start(r.Time)
	var err error
	if w, ok := t.next.(Writer); ok {
		r, err = w.Write(r)
	} else {
		err = t.next.Append(r)
	}
	s.name = "airlock." + r.Kind
	s.attrs = SpanAttributes(r)
	if err != nil {
		s.recordError(err)
		s.status = spanStatus{Code: "Error", Description: "audit record not written"}
	}
	t.spans.end(s)
	return err
}

// Attribute is one of a span's attributes as OpenTelemetry writes it:
// a key, and a value with its type ("STRING", "INT64", "FLOAT64",
// "BOOL").
type Attribute struct {
	Key   string
	Value AttributeValue
}

// AttributeValue is an Attribute's typed value.
type AttributeValue struct {
	Type  string
	Value any
}

func strAttr(k, v string) Attribute { return Attribute{k, AttributeValue{"STRING", v}} }

// SpanAttributes turns a record into span attributes. Fields are flattened
// one level, in the order of their names: scalars as they are, anything
// else as its JSON text (a value that does not encode is left out).
func SpanAttributes(r Record) []Attribute {
	kv := []Attribute{strAttr("airlock.kind", r.Kind)}
	str := func(k, v string) {
		if v != "" {
			kv = append(kv, strAttr(k, v))
		}
	}
	if r.Seq != 0 {
		kv = append(kv, Attribute{"airlock.seq", AttributeValue{"INT64", r.Seq}})
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
			kv = append(kv, strAttr(name, v))
		case bool:
			kv = append(kv, Attribute{name, AttributeValue{"BOOL", v}})
		case int:
			kv = append(kv, Attribute{name, AttributeValue{"INT64", int64(v)}})
		case int64:
			kv = append(kv, Attribute{name, AttributeValue{"INT64", v}})
		case float64:
			kv = append(kv, Attribute{name, AttributeValue{"FLOAT64", v}})
		default:
			if b, err := json.Marshal(v); err == nil {
				kv = append(kv, strAttr(name, string(b)))
			}
		}
	}
	return kv
}

// SpanWriter writes spans to a writer as JSON, one object per line, as
// each ends: the output of OpenTelemetry's stdout exporter behind the
// SDK's default tracer provider (a resource of the service's name and
// the SDK's, span IDs at random, 128 attributes a span at most), which
// audit/otelaudit's tests compare it with. It is written here rather
// than linked from the SDK because the airlock binary pays at every start
// for what it links: the SDK and its exporter were 41 packages, 16 of
// them initialised at each `airlock run` (a tenth of a millisecond and
// some 25 page faults here), for a file that is rarely asked for. Of the
// SDK's environment it reads what changes the output: OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES and the root sampler of OTEL_TRACES_SAMPLER
// and OTEL_TRACES_SAMPLER_ARG; the span limits are the SDK's defaults,
// whatever OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT says.
type SpanWriter struct {
	mu       sync.Mutex
	w        io.Writer
	stopped  bool
	resource []Attribute
	// sample decides from a span's trace ID whether it is written.
	sample func(traceID [16]byte) bool
}

// WriterTracing returns a SpanWriter writing to w, and the function that
// stops it (no span is written after). It is the exporter airlock can
// configure without a collector: wire it when the user asks for spans
// (AIRLOCK_TRACE_FILE) and pass it to Traced.
func WriterTracing(w io.Writer) (*SpanWriter, func(context.Context) error, error) {
	return WriterTracingEnv(w, os.Getenv)
}

// WriterTracingEnv is WriterTracing reading the OTEL_ variables through
// getenv: those of the run's caller, which need not be this process's
// (`airlock warm` serves another process's run).
func WriterTracingEnv(w io.Writer, getenv func(string) string) (*SpanWriter, func(context.Context) error, error) {
	s := &SpanWriter{w: w, resource: defaultResource(getenv), sample: rootSampler(getenv)}
	return s, func(context.Context) error {
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		return nil
	}, nil
}

// maxSpanAttributes is the SDK's default span attribute count limit.
const maxSpanAttributes = 128

// sdkVersion is the OpenTelemetry SDK release whose output SpanWriter
// writes, named in every span's resource (telemetry.sdk.version);
// audit/otelaudit's tests hold it to the SDK this module requires.
const sdkVersion = "1.44.0"

// scope is the instrumentation scope every span names.
const scope = "github.com/airlock-run/airlock/audit"

// defaultResource is the SDK's default resource: the service's name
// (OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES' service.name, else
// "unknown_service:" and the executable's name), the attributes
// OTEL_RESOURCE_ATTRIBUTES names, and the SDK's own, sorted by key.
func defaultResource(getenv func(string) string) []Attribute {
	attrs := map[string]string{}
	if exe, err := os.Executable(); err == nil {
		attrs["service.name"] = "unknown_service:" + filepath.Base(exe)
	} else {
		attrs["service.name"] = "unknown_service:go"
	}
	if env := strings.TrimSpace(getenv("OTEL_RESOURCE_ATTRIBUTES")); env != "" {
		for _, p := range strings.Split(env, ",") {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				continue // the SDK drops a pair without a value
			}
			val, err := url.PathUnescape(strings.TrimSpace(v))
			if err != nil {
				val = v // as the SDK: the value as given
			}
			if k = strings.TrimSpace(k); k != "" {
				attrs[k] = val
			}
		}
	}
	if name := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); name != "" {
		attrs["service.name"] = name
	}
	attrs["telemetry.sdk.language"] = "go"
	attrs["telemetry.sdk.name"] = "opentelemetry"
	attrs["telemetry.sdk.version"] = sdkVersion
	out := make([]Attribute, 0, len(attrs))
	for k, v := range attrs {
		out = append(out, strAttr(k, v))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// rootSampler is the SDK's sampler of OTEL_TRACES_SAMPLER for a span
// with no parent (every span Traced writes): always (the default and
// unknown names), never, or by trace ID for a ratio.
func rootSampler(getenv func(string) string) func([16]byte) bool {
	always := func([16]byte) bool { return true }
	ratio := func() float64 {
		arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
		if arg == "" {
			return 1
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 1
		}
		return r
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))) {
	case "always_off", "parentbased_always_off":
		return func([16]byte) bool { return false }
	case "traceidratio", "parentbased_traceidratio":
		r := ratio()
		if r >= 1 {
			return always
		}
		bound := uint64(r * (1 << 63))
		return func(id [16]byte) bool { return binary.BigEndian.Uint64(id[8:16])>>1 < bound }
	}
	return always
}

// span is one span being written.
type span struct {
	name         string
	traceID      [16]byte
	spanID       [8]byte
	start        time.Time
	attrs        []Attribute
	events       []spanEvent
	status       spanStatus
	sampledOut   bool
	droppedAttrs int
}

type spanStatus struct {
	Code        string
	Description string
}

type spanEvent struct {
	Name                  string
	Attributes            []Attribute
	DroppedAttributeCount int
	Time                  time.Time
}

// start begins a span at t, or now for the zero t.
func (w *SpanWriter) start(t time.Time) *span {
	s := &span{start: t, status: spanStatus{Code: "Unset"}}
	if t.IsZero() {
		s.start = time.Now()
	}
	for s.traceID == ([16]byte{}) {
		rand.Read(s.traceID[:])
	}
	for s.spanID == ([8]byte{}) {
		rand.Read(s.spanID[:])
	}
	s.sampledOut = !w.sample(s.traceID)
	return s
}

// recordError adds the exception event OpenTelemetry's RecordError adds.
func (s *span) recordError(err error) {
	s.events = append(s.events, spanEvent{Name: "exception", Time: time.Now(), Attributes: []Attribute{
		strAttr("exception.type", errorType(err)), strAttr("exception.message", err.Error())}})
}

// errorType names err's type as the SDK does.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return fmt.Sprintf("%s.%s", t.PkgPath(), t.Name())
}

// spanContext is a span's or its parent's identity as the exporter
// writes it.
type spanContext struct {
	TraceID    string
	SpanID     string
	TraceFlags string
	TraceState string
	Remote     bool
}

// scopeJSON is the instrumentation scope as the exporter writes it.
type scopeJSON struct {
	Name       string
	Version    string
	SchemaURL  string
	Attributes []Attribute
}

// spanJSON is the exporter's span, field for field.
type spanJSON struct {
	Name                   string
	SpanContext            spanContext
	Parent                 spanContext
	SpanKind               int
	StartTime              time.Time
	EndTime                time.Time
	Attributes             []Attribute
	Events                 []spanEvent
	Links                  []struct{}
	Status                 spanStatus
	DroppedAttributes      int
	DroppedEvents          int
	DroppedLinks           int
	ChildSpanCount         int
	Resource               []Attribute
	InstrumentationScope   scopeJSON
	InstrumentationLibrary scopeJSON
}

// end ends s now and writes it, unless it was sampled out or w stopped.
func (w *SpanWriter) end(s *span) {
	end := s.start.Add(time.Since(s.start))
	if s.sampledOut {
		return
	}
	attrs := s.attrs
	if len(attrs) > maxSpanAttributes {
		s.droppedAttrs = len(attrs) - maxSpanAttributes
		attrs = attrs[:maxSpanAttributes]
	}
	sc := scopeJSON{Name: scope}
	out := spanJSON{
		Name: s.name,
		SpanContext: spanContext{TraceID: hex.EncodeToString(s.traceID[:]), SpanID: hex.EncodeToString(s.spanID[:]),
			TraceFlags: "01"},
		Parent:    spanContext{TraceID: strings.Repeat("0", 32), SpanID: strings.Repeat("0", 16), TraceFlags: "00"},
		SpanKind:  1, // internal
		StartTime: s.start, EndTime: end,
		Attributes: attrs, Events: s.events, Status: s.status, DroppedAttributes: s.droppedAttrs,
		InstrumentationScope: sc, InstrumentationLibrary: sc,
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	out.Resource = w.resource
	b, err := json.Marshal(out)
	if err != nil {
		return // as the exporter: a span that does not encode is not written
	}
	w.w.Write(append(b, '\n'))
}
