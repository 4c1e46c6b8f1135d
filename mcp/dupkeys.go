package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/airlock-run/airlock/errs"
)

// MaxDepth is the deepest nesting of JSON arrays and objects accepted.
const MaxDepth = 512

// CheckJSON reports whether data is one JSON value in which no object holds
// the same key twice (compared after unescaping, so "a" and "\u0061" are the
// same key). Parsers disagree on which of two equal keys wins; a gateway that
// read the first while the server read the last would decide one call and
// forward another, so such a message is refused whole.
func CheckJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// Each open object keeps the keys seen so far; an open array keeps nil.
	type frame struct {
		keys   map[string]struct{}
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
			if _, dup := stack[top].keys[k]; dup {
				return errs.Invalidf("JSON: duplicate key %q", k)
			}
			stack[top].keys[k] = struct{}{}
			stack[top].key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			if len(stack) >= MaxDepth {
				return errs.Invalidf("JSON: nested deeper than %d", MaxDepth)
			}
			stack = append(stack, frame{keys: map[string]struct{}{}, object: true, key: true})
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
