package wire

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/airlock-run/airlock/errs"
)

// CheckJSON refuses a JSON text that is not one value or that repeats a
// key in an object, spelled the same or differently under case folding:
// encoding/json matches keys to fields ignoring case and lets the last
// one win, so {"tier0":false,"Tier0":true} would read as whatever the
// last spelling says while a reader of the first saw false. The
// server's API bodies and the nodes' answers are checked with it before
// they are decoded.
func CheckJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := checkValue(dec, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err == nil {
		return errs.Invalidf("the body holds more than one JSON value")
	}
	return nil
}

// checkValue reads one value from dec, refusing repeated keys in every
// object in it; at names where it is, for the error.
func checkValue(dec *json.Decoder, at string) error {
	tok, err := dec.Token()
	if err != nil {
		return errs.Invalidf("the body is not JSON: %v", err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return errs.Invalidf("the body is not JSON: %v", err)
			}
			key, _ := k.(string)
			fold := strings.ToLower(strings.ToUpper(key))
			if seen[fold] {
				return errs.Invalidf("%s%s: the key is given twice (keys are matched ignoring case)", at, key)
			}
			seen[fold] = true
			if err := checkValue(dec, at+key+"."); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
	case json.Delim('['):
		for dec.More() {
			if err := checkValue(dec, at); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
	}
	if err != nil {
		return errs.Invalidf("the body is not JSON: %v", err)
	}
	return nil
}
