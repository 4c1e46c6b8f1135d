package mediator

import (
	"context"
	"encoding/json"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/fit"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/policy"
)

// The read_result tool, as every front end offers it, and the result cap.
const (
	ReadResultTool        = offload.ToolName
	ReadResultDescription = offload.ToolDescription
	ReadResultSchema      = offload.ToolSchema
	// MaxResult is the most a result may weigh as UTF-8 JSON; a heavier
	// one fails the call with a request for less.
	MaxResult = offload.MaxResult
)

// TooLarge is the failure of a call whose result of n bytes is over
// MaxResult.
func TooLarge(tool string, n int) error { return offload.TooLarge(tool, n) }

// DefaultBudget is the budget of a call that names none, for an agent
// whose context use airlock does not know.
func DefaultBudget() int { return fit.DefaultBudget(0, false) }

// KeepsResults says whether the kernel has a file store for results too
// heavy to show, and so answers read_result.
func (k *Kernel) KeepsResults() bool { return k.run.offloader != nil }

// FitRequest is a text a call made, on its way to the model.
type FitRequest struct {
	// Tool made the text; an offloaded text is kept under its name.
	Tool string
	Text string
	// Name tells fit what the text is (a file's path gives its kind).
	Name string
	// View, Budget and Query are the fit convention's arguments the call
	// gave; all zero leaves the text whole (but for offloading).
	View   string
	Budget int
	Query  string
	// OverBudget cuts the text only when it weighs more than Budget: the
	// tool was handed the view and query itself and answered with more
	// than it was asked for.
	OverBudget bool
}

// FitResult is the text the model reads.
type FitResult struct {
	Text string
	// Note says how the text was cut; nil when it was not.
	Note *fit.Note
	// Offloaded names the file the whole text was kept as; nil when the
	// text is inline.
	Offloaded *offload.Offloaded
}

// Fit cuts a call's text to the view, budget and query it asked for, then
// keeps it in the file store with a stub in its place when it is still too
// heavy for the model: the one path every front end's results take. A text
// over MaxResult as JSON fails with a request for less.
func (k *Kernel) Fit(ctx context.Context, r FitRequest) (FitResult, error) {
	if n := offload.JSONSize(r.Text); n > MaxResult {
		return FitResult{}, TooLarge(r.Tool, n)
	}
	out := FitResult{Text: r.Text}
	v := fit.View(r.View)
	if r.View != "" && !v.Valid() {
		return out, errs.Invalidf("%s: view %q is not one of stub, summary, section, full", r.Tool, r.View)
	}
	cut := fit.Wanted(v, r.Budget, r.Query)
	if r.OverBudget {
		cut = r.Budget > 0 && fit.Weigh(r.Text) > r.Budget
	}
	if cut {
		f := fit.Fit(r.Text, fit.Request{View: v, Budget: r.Budget, Query: r.Query, Name: r.Name})
		out.Text, out.Note = f.Text, &f.Note
	}
	if k.run.offloader == nil {
		return out, nil
	}
	o, err := k.run.offloader.Offload(ctx, k.run.scope, r.Tool, out.Text)
	if err != nil {
		return out, err
	}
	if o.Stub != nil {
		out.Text, out.Offloaded = o.Text, &o.Stub.Offloaded
		if err := k.record(ctx, Record{Kind: "offload", Time: k.now(), Verdict: policy.Allow, Decider: "offload",
			Category: policy.CatTools, Fields: map[string]any{"tool": r.Tool, "offloaded": o.Stub.Offloaded}}); err != nil {
			return FitResult{}, err
		}
	}
	return out, nil
}

// ReadResultOut is the part of an offloaded result that was read.
type ReadResultOut struct {
	Text string
	Note fit.Note
}

// ReadResult decides a read_result call (as a call of the tool
// read_result, with args as the model gave them) and reads that part of
// the kernel's file store, fitted as asked. Its text is not fitted or
// offloaded again.
func (k *Kernel) ReadResult(ctx context.Context, call Call) (ReadResultOut, error) {
	if call.Kind != KindReadResult {
		return ReadResultOut{}, errs.Invalidf("read_result: a %s call is not a read of a result", call.Kind)
	}
	call.Tool = ReadResultTool
	if _, err := k.Decide(ctx, call); err != nil {
		return ReadResultOut{}, err
	}
	a, err := offload.ArgsFrom(plainNumbers(call.Args))
	if err != nil {
		return ReadResultOut{}, err
	}
	if k.run.offloader == nil {
		return ReadResultOut{}, errs.NotFoundf("read_result: this server keeps no results")
	}
	r, err := k.run.offloader.ReadResult(ctx, k.run.scope, a)
	if err != nil {
		return ReadResultOut{}, err
	}
	return ReadResultOut{Text: r.Text, Note: r.Note}, nil
}

// plainNumbers turns the json.Numbers of a decoder that keeps them into the
// float64s offload reads.
func plainNumbers(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if n, ok := v.(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		out[k] = v
	}
	return out
}
