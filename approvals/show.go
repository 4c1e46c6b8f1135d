package approvals

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Show renders a string from the agent for a terminal: bare when it is
// made only of characters that cannot mislead (letters, digits and a few
// punctuation marks), otherwise double-quoted with everything outside
// printable ASCII escaped: controls, bidirectional overrides, zero-width
// characters, invalid bytes, and look-alike letters from other scripts (a
// Cyrillic "і" in "gіt" shows as \u0456). The result never holds a newline,
// a carriage return or an escape sequence, so a call cannot end the prompt's
// line and draw a fake one.
func Show(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !safeBare(r) }) < 0 {
		return s
	}
	return strconv.QuoteToASCII(s)
}

func safeBare(r rune) bool {
	return r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./=:,+@%^", r))
}

// ShowArgv renders an argv one Show'n word after another.
func ShowArgv(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = Show(a)
	}
	return strings.Join(words, " ")
}

// ShowValue renders a JSON-like value (tool arguments) with keys sorted and
// every string through Show.
func ShowValue(v any) string {
	var b strings.Builder
	showValue(&b, v, 0)
	return b.String()
}

func showValue(b *strings.Builder, v any, depth int) {
	if depth > 32 {
		b.WriteString("…")
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(strconv.QuoteToASCII(x))
	case bool, float64, float32, int, int64, json.Number:
		fmt.Fprint(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			showValue(b, e, depth+1)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(Show(k))
			b.WriteString(": ")
			showValue(b, x[k], depth+1)
		}
		b.WriteByte('}')
	default:
		// Not a JSON value; show its JSON if it has one, quoted.
		j, err := json.Marshal(x)
		if err != nil {
			j = []byte(fmt.Sprintf("%T", x))
		}
		b.WriteString(strconv.QuoteToASCII(string(j)))
	}
}

// ShowCall renders the call of r on one line: the argv, the shell string,
// or the tool with its arguments.
func ShowCall(r Request) string {
	switch {
	case r.Tool != "":
		return Show(r.Tool) + " " + ShowValue(r.Args)
	case len(r.Argv) > 0:
		return ShowArgv(r.Argv)
	case r.Command != "":
		return Show(r.Command)
	}
	return "(empty call)"
}
