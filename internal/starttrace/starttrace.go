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
package starttrace

import (
	"encoding/json"
	"fmt"
	"io"
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

// Main marks the start of main: everything before it is the Go runtime's
// start and the packages' initialisation.
func Main() {
	if on {
		addFaults("go-start", origin, time.Since(origin), faults())
	}
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
	b, _ := json.Marshal(t)
	fmt.Fprintf(w, "%s%s\n", Prefix, b)
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
