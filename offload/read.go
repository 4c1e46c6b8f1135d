package offload

import (
	"context"
	"strconv"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/fit"
)

// Args are read_result's arguments, as the model gives them.
type Args struct {
	// Ref is the offloaded result's reference, from its stub.
	Ref string `json:"ref"`
	// View is stub, summary, section or full; "" is the biggest that fits.
	View string `json:"view,omitempty"`
	// Section names a part: a heading, a top-level key or an item ("[3]").
	Section string `json:"section,omitempty"`
	// Range is lines of the read form, "120-180" (from 1, inclusive).
	Range string `json:"range,omitempty"`
	// Query is any other query fit understands (a definition's name, a
	// path, a diff hunk "path#2").
	Query string `json:"query,omitempty"`
	// Budget is the most tokens the answer may take; 0 means the default
	// budget (fit.DefaultBudget), which the caller may fill in beforehand.
	Budget int `json:"budget,omitempty"`
}

// ReadResult answers read_result: the part of the file ref that the
// arguments name, fitted to the budget, with the fit note. The file must be
// one sc may read; any other is "not found", as for a ref never stored.
func ReadResult(ctx context.Context, st *files.Store, sc files.Scope, a Args) (fit.Result, error) {
	ref, err := files.ParseRef(strings.TrimSpace(a.Ref))
	if err != nil {
		return fit.Result{}, err
	}
	q, err := a.query()
	if err != nil {
		return fit.Result{}, err
	}
	view := fit.View(strings.TrimSpace(a.View))
	if view != "" && !view.Valid() {
		return fit.Result{}, errs.Invalidf("read_result: view %q is not one of stub, summary, section, full", a.View)
	}
	if view == "" && q != "" {
		// A part was named: answer with that part (or smaller), not with
		// the whole just because the whole would fit.
		view = fit.Section
	}
	if a.Budget < 0 {
		return fit.Result{}, errs.Invalidf("read_result: budget %d is negative", a.Budget)
	}
	budget := a.Budget
	if budget == 0 {
		budget = fit.DefaultBudget(0, false)
	}
	if st == nil {
		return fit.Result{}, errs.Unavailablef("read_result: no file store is configured")
	}
	data, err := st.Get(ctx, sc, ref)
	if err != nil {
		return fit.Result{}, err
	}
	return fit.Fit(string(data), fit.Request{View: view, Budget: budget, Query: q}), nil
}

// query turns section, range and query into fit's one query; they name the
// same thing in different words, so at most one may be given.
func (a Args) query() (string, error) {
	var given []string
	var q string
	for _, p := range []struct{ name, v string }{{"section", a.Section}, {"range", a.Range}, {"query", a.Query}} {
		if v := strings.TrimSpace(p.v); v != "" {
			given = append(given, p.name)
			q = v
		}
	}
	if len(given) > 1 {
		return "", errs.Invalidf("read_result: give one of %s, not several", strings.Join(given, ", "))
	}
	if r := strings.TrimSpace(a.Range); r != "" {
		if err := checkRange(r); err != nil {
			return "", err
		}
	}
	return q, nil
}

// checkRange accepts "A-B" with 1 <= A <= B, lines counted from 1.
func checkRange(r string) error {
	lo, hi, ok := strings.Cut(r, "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil || a < 1 || b < a {
		return errs.Invalidf("read_result: range %q is not lines such as \"120-180\" (first line 1, first <= last)", r)
	}
	return nil
}

// ReadResult answers read_result from o's store; see the function
// ReadResult.
func (o *Offloader) ReadResult(ctx context.Context, sc files.Scope, a Args) (fit.Result, error) {
	return ReadResult(ctx, o.Store, sc, a)
}
