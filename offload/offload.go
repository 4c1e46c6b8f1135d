// Package offload keeps a tool result too big for a model's context whole in
// the file store and gives the model a stub to read instead; it answers
// read_result, the built-in through which the model reads parts of such a
// result back; and it hands files between tools (references in a call's
// arguments become read-only paths).
//
// Stubs and outlines are cut from the text by package fit, never written by a
// model: they cost nothing, the result's text cannot steer them, and the same
// text always gives the same stub.
//
// The mediator, the MCP server and the CLI import it. It imports files, fit
// and errs.
package offload

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/fit"
)

// DefaultThreshold is the weight in tokens above which a result is
// offloaded when neither the agent nor the tenant says otherwise. It comes
// from the budget fitted tools get by default (at most 8,000 tokens), so an
// answer fitted to its default budget stays inline.
const DefaultThreshold = 10000

// MaxResult is the most a call's result may come to, in bytes of UTF-8
// JSON: 31 MiB, so that with its envelope it still fits the 32 MiB payload
// a result is kept as.
const MaxResult = 31 << 20

// OutlineCap is the most tokens a stub's outline takes, whatever the
// threshold.
const OutlineCap = 1000

// Threshold resolves the offload threshold of an agent: its own setting (a
// number of tokens, "off", or "" for none), within the tenant's ceiling
// (0: none), else the tenant's default (0: none), else DefaultThreshold. It
// returns 0 for "off", which only holds where the tenant sets no ceiling;
// under a ceiling "off" and bigger numbers give the ceiling.
func Threshold(agent string, tenantDefault, ceiling int) (int, error) {
	if tenantDefault < 0 || ceiling < 0 {
		return 0, errs.Invalidf("offload: a tenant's default and ceiling are token counts, not negative")
	}
	t := DefaultThreshold
	if tenantDefault > 0 {
		t = tenantDefault
	}
	switch a := strings.TrimSpace(agent); a {
	case "":
	case "off":
		t = 0
	default:
		n, err := strconv.Atoi(a)
		if err != nil || n <= 0 {
			return 0, errs.Invalidf("offload: threshold %q is not a positive number of tokens or \"off\"", agent)
		}
		t = n
	}
	if ceiling > 0 && (t == 0 || t > ceiling) {
		t = ceiling
	}
	return t, nil
}

// Offloader offloads big results of one agent's tool calls.
type Offloader struct {
	// Store keeps offloaded results; it must be set.
	Store *files.Store
	// Threshold is the weight in tokens (fit.Weigh) above which a result is
	// kept as a file; 0 means offloading is off and every result is inline.
	// Resolve it with Threshold.
	Threshold int
}

// Stub is what the model reads in place of an offloaded result.
type Stub struct {
	Offloaded Offloaded `json:"offloaded"`
	// Outline is the result's outline summary, or its headings alone when
	// the summary does not fit a quarter of the threshold; at most
	// OutlineCap tokens.
	Outline string `json:"outline"`
	// Note says why the result was kept as a file and how to read it.
	Note string `json:"note"`
}

// Offloaded describes the kept file.
type Offloaded struct {
	Ref  string   `json:"ref"`
	Kind fit.Kind `json:"kind"`
	// Size is the length in bytes of the kept file: the result's text.
	Size int `json:"size"`
	// Tokens is the result's weight (fit.Weigh).
	Tokens int `json:"tokens"`
	// Lines counts lines of the form the result is read in (fit.ReadForm):
	// a JSON value one indented line per value, anything else as it is.
	Lines int `json:"lines"`
}

// Outcome is what became of one result.
type Outcome struct {
	// Text is what the model reads: the result itself, or the stub as JSON.
	Text string
	// Stub is set when the result was offloaded.
	Stub *Stub
	// Ref is the kept file, when offloaded.
	Ref files.Ref
}

// Offload decides what the model reads of tool's result text in scope sc.
// A result over MaxResult as UTF-8 JSON is an Invalid error asking for less,
// and nothing is kept. A result that weighs more than the threshold is kept
// whole as a file of sc's tree, and the model reads its stub; any other
// result comes back unchanged.
func (o *Offloader) Offload(ctx context.Context, sc files.Scope, tool, text string) (Outcome, error) {
	if n := JSONSize(text); n > MaxResult {
		return Outcome{}, TooLarge(tool, n)
	}
	if o.Threshold <= 0 {
		return Outcome{Text: text}, nil
	}
	tokens := fit.Weigh(text)
	if tokens <= o.Threshold {
		return Outcome{Text: text}, nil
	}
	if o.Store == nil {
		return Outcome{}, errs.Unavailablef("offload: the result of %s is %d tokens and no file store is configured to keep it", tool, tokens)
	}
	ref, err := o.Store.Put(ctx, sc, []byte(text))
	if err != nil {
		return Outcome{}, fmt.Errorf("offload: keep the result of %s: %w", tool, err)
	}
	stub := MakeStub(ref, tool, text, tokens, o.Threshold)
	b, err := json.Marshal(stub)
	if err != nil {
		return Outcome{}, errs.Wrap(errs.Internal, err, "offload: encode the stub")
	}
	return Outcome{Text: string(b), Stub: &stub, Ref: ref}, nil
}

// MakeStub builds the stub of text kept as ref: a pure function of its
// arguments, so the same result always gives the same stub. tokens is
// fit.Weigh(text), passed in because the caller has it.
func MakeStub(ref files.Ref, tool, text string, tokens, threshold int) Stub {
	size := len(text) // of the kept bytes, before any repair below
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	kind := fit.Detect(text, "")
	lines := countLines(fit.ReadForm(text, kind))
	budget := min(threshold/4, OutlineCap)
	outline := fit.Outline(text, "", budget)
	if outline == "" {
		// A text with no parts (one long line, say) still gets its stub
		// view, which says how big it is and how to ask for parts.
		outline = fit.Fit(text, fit.Request{View: fit.Stub, Budget: budget}).Text
	}
	note := fmt.Sprintf("The result of %s (%d tokens, %d lines) is more than the %d tokens this agent reads inline, "+
		"so it was kept as a file of this job and left out here. Read parts of it with read_result: "+
		"ref %q with section (a heading, a top-level key or an item such as \"[3]\"), range (lines such as \"120-180\"), "+
		"or query, and a budget.", tool, tokens, lines, threshold, ref.String())
	return Stub{
		Offloaded: Offloaded{Ref: ref.String(), Kind: kind, Size: size, Tokens: tokens, Lines: lines},
		Outline:   outline,
		Note:      note,
	}
}

// countLines counts lines as fit does: a last line without a newline counts.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// JSONSize is the length in bytes of text encoded as a JSON string (UTF-8,
// with its quotes and escapes), computed without building it.
func JSONSize(text string) int {
	n := 2
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6 // \u00XX, as encoding/json writes them
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// TooLarge is the failure of a call whose result comes to n bytes of JSON,
// over MaxResult: the model reads that the call was made, that its result is
// not used, and to ask for less.
func TooLarge(tool string, n int) error {
	return errs.Invalidf("offload: the result of %s is %.1f MiB as JSON, more than the %d MiB a call may return, so it was not used or kept (ask for less: a narrower query, a range or fewer items)",
		tool, float64(n)/(1<<20), MaxResult>>20)
}
