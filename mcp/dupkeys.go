package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/airlock-run/airlock/errs"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxDepth is the deepest nesting of JSON arrays and objects accepted.
const MaxDepth = 512

// CheckJSON reports whether data is one JSON value in which no object holds
// two keys that are one key under folding: compared after unescaping ("a"
// and "\u0061"), and after NFKC normalisation and Unicode case folding
// ("name", "Name", "NAME", "ｎａｍｅ", "\u212ame" all fold to one). Parsers
// disagree on which of two equal keys wins, and Go's encoding/json matches
// struct fields without case while JavaScript matches exactly; a gateway
// that read one key while the server read the other would decide one call
// and forward another, so such a message is refused whole, at any depth.
func CheckJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// Each open object keeps the keys seen so far; an open array keeps nil.
	type frame struct {
		keys   map[string]string // folded key → the key as written
		object bool
		key    bool // the next string token of this object is a key
	}
	var stack []frame
	// ended is called after each complete value: the enclosing object
	// expects a key next, and the outermost value must be the last thing.
	ended := func() (bool, error) {
		if top := len(stack) - 1; top >= 0 {
			if stack[top].object {
				stack[top].key = true
			}
			return false, nil
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return true, errs.Invalidf("JSON: trailing data after the value")
		}
		return true, nil
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return errs.Invalidf("JSON: unexpected end")
		}
		if err != nil {
			return errs.Wrap(errs.Invalid, err, "JSON")
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].key {
			k, ok := tok.(string)
			if !ok {
				if d, isDelim := tok.(json.Delim); !isDelim || d != '}' {
					return errs.Invalidf("JSON: an object key is not a string")
				}
				stack = stack[:top]
				if done, err := ended(); done || err != nil {
					return err
				}
				continue
			}
			f := FoldKey(k)
			if first, dup := stack[top].keys[f]; dup {
				if first == k {
					return errs.Invalidf("JSON: duplicate key %q", k)
				}
				return errs.Invalidf("JSON: duplicate key %q and %q (the same key under case or Unicode folding)", first, k)
			}
			stack[top].keys[f] = k
			stack[top].key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			if len(stack) >= MaxDepth {
				return errs.Invalidf("JSON: nested deeper than %d", MaxDepth)
			}
			stack = append(stack, frame{keys: map[string]string{}, object: true, key: true})
			continue
		case json.Delim('['):
			if len(stack) >= MaxDepth {
				return errs.Invalidf("JSON: nested deeper than %d", MaxDepth)
			}
			stack = append(stack, frame{})
			continue
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:top]
		}
		if done, err := ended(); done || err != nil {
			return err
		}
	}
}

// FoldKey is the form in which CheckJSON compares the keys of one object
// and names are compared for look-alikes: NFKC, then Unicode case folding,
// then NFKC again (case folding can undo a normal form), the Unicode
// "NFKC_Casefold" closure in practice. ASCII keys, by far the most common,
// take a fast path with the same result.
func FoldKey(k string) string {
	ascii := true
	for i := 0; i < len(k); i++ {
		if k[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(k)
	}
	return norm.NFKC.String(cases.Fold().String(norm.NFKC.String(k)))
}
