package escape

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Outcome is how one attempt ended on one mechanism.
type Outcome string

const (
	// Held: the attempt reached its target unconfined and not in the box.
	Held Outcome = "held"
	// Escaped: the attempt reached its target from inside a box whose
	// mechanism promises to stop it.
	Escaped Outcome = "escaped"
	// Untested: the attempt did not reach its target unconfined on this
	// machine, so the box holding it proves nothing; or the mechanism
	// cannot be run here.
	Untested Outcome = "untested"
	// Open: the attempt reached its target under a mechanism that promises
	// no containment (tier 0), as declared.
	Open Outcome = "open"
	// Unsupported: airlock does not offer the mechanism on this platform.
	Unsupported Outcome = "unsupported"
	// Failed: the box could not be built or run; nothing was attempted.
	Failed Outcome = "failed"
)

// Result is one attempt on one mechanism.
type Result struct {
	Attempt   string  `json:"attempt"`
	Class     string  `json:"class"`
	Mechanism string  `json:"mechanism"`
	Outcome   Outcome `json:"outcome"`
	// Detail is what happened, one line: the error that stopped the
	// attempt, what it reached, or why it is untested.
	Detail string `json:"detail,omitempty"`
}

// Baseline is an attempt run unconfined.
type Baseline struct {
	Attempt string `json:"attempt"`
	Reached bool   `json:"reached"`
	Detail  string `json:"detail,omitempty"`
}

// MechanismStatus is whether the matrix could run a mechanism here.
type MechanismStatus struct {
	Mechanism
	Status string `json:"status"` // run, unsupported, untested
	Reason string `json:"reason,omitempty"`
}

// Report is one run of the matrix on one machine.
type Report struct {
	Platform   string            `json:"platform"`
	Mechanisms []MechanismStatus `json:"mechanisms"`
	Baselines  []Baseline        `json:"baselines"`
	Results    []Result          `json:"results"`
	// Escapes counts Escaped results; Failures counts Failed ones.
	Escapes  int `json:"escapes"`
	Failures int `json:"failures"`
}

func (r *Report) count() {
	r.Escapes, r.Failures = 0, 0
	for _, x := range r.Results {
		switch x.Outcome {
		case Escaped:
			r.Escapes++
		case Failed:
			r.Failures++
		}
	}
}

// Table prints the report as a table: one line per attempt, a column for the
// unconfined run and one per mechanism, then the details of every result
// that is not held.
func (r *Report) Table(w io.Writer) {
	type key struct{ attempt, mech string }
	by := map[key]Result{}
	var order []string
	seen := map[string]bool{}
	class := map[string]string{}
	for _, x := range r.Results {
		by[key{x.Attempt, x.Mechanism}] = x
		if !seen[x.Attempt] {
			seen[x.Attempt] = true
			order = append(order, x.Attempt)
			class[x.Attempt] = x.Class
		}
	}
	base := map[string]Baseline{}
	for _, b := range r.Baselines {
		base[b.Attempt] = b
	}
	fmt.Fprintf(w, "escape matrix on %s\n\n", r.Platform)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	head := []string{"ATTEMPT", "CLASS", "UNCONFINED"}
	for _, m := range r.Mechanisms {
		head = append(head, fmt.Sprintf("%s (tier %d)", m.Name, m.Tier))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, a := range order {
		un := "not reached"
		if b, ok := base[a]; ok && b.Reached {
			un = "reached"
		}
		cells := []string{a, class[a], un}
		for _, m := range r.Mechanisms {
			cells = append(cells, string(by[key{a, m.Name}].Outcome))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, m := range r.Mechanisms {
		if m.Reason != "" {
			fmt.Fprintf(w, "%s: %s: %s\n", m.Name, m.Status, m.Reason)
		}
	}
	var notes []string
	reasons := map[string]string{}
	for _, m := range r.Mechanisms {
		reasons[m.Name] = m.Reason
	}
	for _, x := range r.Results {
		if x.Detail == reasons[x.Mechanism] {
			continue // said once above
		}
		if x.Outcome == Escaped || x.Outcome == Failed || x.Outcome == Untested {
			notes = append(notes, fmt.Sprintf("%s on %s: %s: %s", x.Attempt, x.Mechanism, x.Outcome, x.Detail))
		}
	}
	sort.Strings(notes)
	for _, n := range dedupe(notes) {
		fmt.Fprintln(w, n)
	}
	counts := map[Outcome]int{}
	for _, x := range r.Results {
		counts[x.Outcome]++
	}
	fmt.Fprintf(w, "\n%d results: %d held, %d escaped, %d untested, %d open (tier 0), %d unsupported, %d failed\n",
		len(r.Results), counts[Held], counts[Escaped], counts[Untested], counts[Open], counts[Unsupported], counts[Failed])
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
