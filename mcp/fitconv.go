package mcp

import (
	"encoding/json"

	"github.com/airlock-run/airlock/fit"
)

// MetaFit is the key under `_meta` of a tool result that airlock fitted or
// offloaded; its value is a FitMeta.
const MetaFit = "airlock/fit"

// FitMeta is what a result says under `_meta["airlock/fit"]`.
type FitMeta struct {
	// Note is the fit note of a fitted text; nil when the text was not cut.
	Note *fit.Note `json:"fit,omitempty"`
	// Offloaded names the file an offloaded text was kept as: its ref,
	// kind, size, tokens and lines (offload.Offloaded), nil when inline.
	Offloaded any `json:"offloaded,omitempty"`
	// BudgetFilled is the budget airlock filled in for a call that named
	// none (a fit-convention tool); 0 when the call named its own.
	BudgetFilled int `json:"budget_filled,omitempty"`
	// Items counts the content items of the result that were fitted or
	// offloaded.
	Items int `json:"items,omitempty"`
}

// FitConvention reports whether a tool's input schema follows the fit
// convention: an integer `budget` property beside a `view` property whose
// enum holds only fit's views (stub, summary, section, full; null allowed).
// A `budget` without such a `view` (an amount of money, say) is not the
// convention, and airlock never fills it in.
func FitConvention(inputSchema json.RawMessage) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(inputSchema) == 0 || json.Unmarshal(inputSchema, &s) != nil {
		return false
	}
	return isInteger(s.Properties["budget"]) && isViewEnum(s.Properties["view"])
}

// schemaAlts is a property schema with the ways its type may be spelled:
// "type": "integer", "type": ["integer", "null"], or anyOf/oneOf of such
// schemas (what Optional types give).
type schemaAlts struct {
	Type  json.RawMessage   `json:"type"`
	Enum  []json.RawMessage `json:"enum"`
	AnyOf []json.RawMessage `json:"anyOf"`
	OneOf []json.RawMessage `json:"oneOf"`
}

func readAlts(raw json.RawMessage) (schemaAlts, bool) {
	var s schemaAlts
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return s, false
	}
	return s, true
}

func typeNames(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}

// isInteger: the property's type is integer (with null at most beside it).
func isInteger(raw json.RawMessage) bool {
	s, ok := readAlts(raw)
	if !ok {
		return false
	}
	if len(s.Type) == 0 && len(s.AnyOf)+len(s.OneOf) > 0 {
		return oneBranch(s, isInteger)
	}
	found := false
	for _, t := range typeNames(s.Type) {
		switch t {
		case "integer":
			found = true
		case "null":
		default:
			return false
		}
	}
	return found
}

// oneBranch: the anyOf/oneOf branches are ok or null, and at least one is ok.
func oneBranch(s schemaAlts, ok func(json.RawMessage) bool) bool {
	found := false
	for _, a := range append(append([]json.RawMessage(nil), s.AnyOf...), s.OneOf...) {
		switch {
		case ok(a):
			found = true
		case !isNull(a):
			return false
		}
	}
	return found
}

func isNull(raw json.RawMessage) bool {
	s, ok := readAlts(raw)
	if !ok {
		return false
	}
	t := typeNames(s.Type)
	return len(t) == 1 && t[0] == "null"
}

// isViewEnum: the property is an enum of fit views (null allowed), directly
// or as one branch of anyOf/oneOf beside null.
func isViewEnum(raw json.RawMessage) bool {
	s, ok := readAlts(raw)
	if !ok {
		return false
	}
	if len(s.Enum) == 0 && len(s.AnyOf)+len(s.OneOf) > 0 {
		return oneBranch(s, isViewEnum)
	}
	views := 0
	for _, e := range s.Enum {
		if string(e) == "null" {
			continue
		}
		var v string
		if json.Unmarshal(e, &v) != nil || !fit.View(v).Valid() {
			return false
		}
		views++
	}
	return views > 0
}

// FillBudget returns args with `budget` set to budget when the call left it
// out (absent or null); filled is false, and args unchanged, when the call
// named one. The map is copied, never changed in place.
func FillBudget(args map[string]any, budget int) (out map[string]any, filled bool) {
	if v, ok := args["budget"]; ok && v != nil {
		return args, false
	}
	out = make(map[string]any, len(args)+1)
	for k, v := range args {
		out[k] = v
	}
	out["budget"] = budget
	return out, true
}
