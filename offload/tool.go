package offload

import (
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/airlock-run/airlock/errs"
)

// ToolName is the name of the built-in through which a model reads parts of
// an offloaded result.
const ToolName = "read_result"

// ToolDescription is read_result's description, as offered to a model.
const ToolDescription = "Read part of a result that was too big to show whole and was kept as a file " +
	"(its stub gives the ref, kind, size, lines and an outline). Name a section (a heading, a top-level key, " +
	"or an item such as [3]) or a range of lines such as 120-180, or a query; the answer is fitted to the budget " +
	"and carries a fit note saying what was left out."

// ToolSchema is read_result's input schema (JSON Schema). view and budget
// follow the fitting convention, so the runtime fills in a budget the model
// leaves out.
const ToolSchema = `{
  "type": "object",
  "properties": {
    "ref": {"type": "string", "description": "the airlock-file:sha256:... reference from the stub"},
    "view": {"type": "string", "enum": ["stub", "summary", "section", "full"]},
    "section": {"type": "string", "description": "a heading, a top-level key, or an item such as [3]"},
    "range": {"type": "string", "description": "lines such as 120-180"},
    "query": {"type": "string"},
    "budget": {"type": "integer", "minimum": 1, "description": "the most tokens the answer may take"}
  },
  "required": ["ref"],
  "additionalProperties": false
}`

// ArgsFrom reads read_result's arguments from a decoded JSON object,
// strictly: an unknown argument, a wrong type or a fractional budget is an
// Invalid error naming it, so a model's mistake is told back to it rather
// than guessed at.
func ArgsFrom(m map[string]any) (Args, error) {
	var a Args
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		var dst *string
		switch k {
		case "ref":
			dst = &a.Ref
		case "view":
			dst = &a.View
		case "section":
			dst = &a.Section
		case "range":
			dst = &a.Range
		case "query":
			dst = &a.Query
		case "budget":
			n, ok := number(v)
			if !ok || n != math.Trunc(n) || n < 0 || n > math.MaxInt32 {
				return Args{}, errs.Invalidf("read_result: budget must be a whole number of tokens")
			}
			a.Budget = int(n)
			continue
		default:
			return Args{}, errs.Invalidf("read_result: unknown argument %q (ref, view, section, range, query, budget)", k)
		}
		if v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return Args{}, errs.Invalidf("read_result: %s must be a string", k)
		}
		*dst = s
	}
	if strings.TrimSpace(a.Ref) == "" {
		return Args{}, errs.Invalidf("read_result: ref is required (the airlock-file:sha256:... reference from the stub)")
	}
	return a, nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case nil:
		return 0, true
	}
	return 0, false
}
