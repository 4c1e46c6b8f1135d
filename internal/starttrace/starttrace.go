// Package starttrace times the phases of one airlock start when the
// environment variable AIRLOCK_TRACE_START is set, so the start benchmark
// can say where the time of `airlock run -- /bin/true` goes: Go start-up,
// policy load, probe, plan, cgroup, seccomp, audit, bubblewrap. It is a
// leaf: the start path's packages (cmd/airlock, internal/wiring, runner,
// sandbox, audit) import it and nothing else of airlock's. Unset, every
// call is a load of one boolean.
//
// The variable is read from airlock's own environment, which no box
// reaches (a box's environment is built from nothing), and the trace holds
// durations and phase names only.
//
// It imports neither fmt nor encoding/json: the airlock binary hands a run
// to `airlock warm` from a package initialised before most of the binary's
// (internal/warmhand), and what that package imports is initialised
// before it; reflect would bring most of the standard library's
// initialisation with it.
package starttrace

import (
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Env is the variable that turns tracing on: "1", or the caller's clock
// (Unix nanoseconds) taken just before it started airlock, which lets the
// trace include the Go runtime's own start before main.
const Env = "AIRLOCK_TRACE_START"

// FaultsEnv, set as well, has every phase timed with Begin count the page
// faults it took (Phase.Faults). It is a choice of its own: the count
// costs two system calls per phase, which the start's own time should
// not carry when it is what is measured.
const FaultsEnv = "AIRLOCK_TRACE_FAULTS"

// Prefix starts the one line Write prints.
const Prefix = "airlock: start trace: "

// Phase is one timed step: when it began after the process's start and how
// long it took, in milliseconds.
type Phase struct {
	Name  string  `json:"name"`
	Start float64 `json:"start_ms"`
	MS    float64 `json:"ms"`
	// N is how many times the phase ran (a pin per bind); MS is their sum
	// and Start the first one's.
	N int `json:"n"`
	// Faults counts the process's minor page faults while a phase timed
	// with Begin ran (summed like MS), any goroutine's, when FaultsEnv is
	// set: on a host where a fault costs microseconds they are much of a
	// start's time. 0 for phases timed elsewhere.
	Faults int64 `json:"faults,omitempty"`
}

var (
	on = os.Getenv(Env) != ""
	// countFaults is FaultsEnv's answer, under on.
	countFaults = on && os.Getenv(FaultsEnv) != ""
	// origin is the caller's clock when it gave one, else this package's
	// initialisation (early: it imports only the standard library).
	origin = originOf(os.Getenv(Env))
	mu     sync.Mutex
	phases []Phase
	// mainAt is when Main last marked the start of airlock's own code.
	mainAt time.Time
)

func originOf(v string) time.Time {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 1e15 {
		return time.Unix(0, n)
	}
	return time.Now()
}

// On reports whether tracing is on.
func On() bool { return on }

// Begin starts the phase name and returns the function that ends it.
func Begin(name string) (end func()) {
	if !on {
		return func() {}
	}
	f0 := faults()
	t := time.Now()
	return func() { addFaults(name, t, time.Since(t), faults()-f0) }
}

// faults is the process's minor page faults so far; 0 unless FaultsEnv
// asked for them.
func faults() int64 {
	if !countFaults {
		return 0
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Minflt)
}

// Since records the phase name as having run from t until now.
func Since(name string, t time.Time) {
	if on {
		add(name, t, time.Since(t))
	}
}

// Span records the phase name as having run for d from t: a phase timed
// elsewhere (inside a box, on the clock it shares with the host).
func Span(name string, t time.Time, d time.Duration) {
	if on {
		add(name, t, d)
	}
}

// maxPhases bounds what a long-lived process (airlock mcp serve, run with
// the variable set) keeps: the trace is of a start, not of a session.
const maxPhases = 4096

func add(name string, t time.Time, d time.Duration) { addFaults(name, t, d, 0) }

func addFaults(name string, t time.Time, d time.Duration, f int64) {
	mu.Lock()
	if len(phases) < maxPhases {
		phases = append(phases, Phase{Name: name, Start: ms(t.Sub(origin)), MS: ms(d), N: 1, Faults: f})
	}
	mu.Unlock()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Main marks the start of airlock's own code: everything before the first
// call is the Go runtime's start and the initialisation of the packages
// initialised first ("go-start"). A second call (main, after the hand-over
// at initialisation went cold) times the rest of the initialisation since
// the first ("go-init").
func Main() {
	if !on {
		return
	}
	now := time.Now()
	mu.Lock()
	first, since := mainAt.IsZero(), mainAt
	mainAt = now
	mu.Unlock()
	if first {
		addFaults("go-start", origin, now.Sub(origin), faults())
		return
	}
	add("go-init", since, now.Sub(since))
}

// Trace is what Write prints: the phases in the order they ended and the
// time from the origin to the Write.
type Trace struct {
	Phases []Phase `json:"phases"`
	Total  float64 `json:"total_ms"`
}

// Write prints the trace as one line (Prefix, then JSON) when tracing is on.
func Write(w io.Writer) {
	if !on {
		return
	}
	mu.Lock()
	t := Trace{Phases: merged(phases), Total: ms(time.Since(origin))}
	mu.Unlock()
	b := append([]byte(Prefix), t.appendJSON(nil)...)
	w.Write(append(b, '\n'))
}

// appendJSON is t as encoding/json writes it (the test holds them equal).
func (t Trace) appendJSON(b []byte) []byte {
	b = append(b, `{"phases":`...)
	if t.Phases == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range t.Phases {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, p.Name)
			b = append(b, `,"start_ms":`...)
			b = appendFloat(b, p.Start)
			b = append(b, `,"ms":`...)
			b = appendFloat(b, p.MS)
			b = append(b, `,"n":`...)
			b = strconv.AppendInt(b, int64(p.N), 10)
			if p.Faults != 0 {
				b = append(b, `,"faults":`...)
				b = strconv.AppendInt(b, p.Faults, 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"total_ms":`...)
	b = appendFloat(b, t.Total)
	return append(b, '}')
}

// appendString is s, valid UTF-8 (phase names are airlock's own
// constants), as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xa8: // U+2028, U+2029
			b = append(b, '\\', 'u', '2', '0', '2', hex[s[i+2]&0xf])
			i += 2
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendFloat writes f as encoding/json does: the shortest form, in
// exponent notation only for very small or very large magnitudes.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0') // never a duration; JSON has no such number
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		b = strconv.AppendFloat(b, f, 'e', -1, 64)
		// encoding/json: clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// merged sums the phases of one name, in the order each name first ended.
func merged(ps []Phase) []Phase {
	var out []Phase
	at := map[string]int{}
	for _, p := range ps {
		i, ok := at[p.Name]
		if !ok {
			at[p.Name] = len(out)
			out = append(out, p)
			continue
		}
		out[i].MS += p.MS
		out[i].N += p.N
		out[i].Faults += p.Faults
		out[i].Start = min(out[i].Start, p.Start)
	}
	return out
}
