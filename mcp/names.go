package mcp

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-run/airlock/errs"
	"golang.org/x/text/unicode/norm"
)

// MaxNameLen is the longest name accepted, in bytes after normalisation.
// The MCP specification asks for at most 128 characters; a little room is
// left for servers that count differently, and nothing longer is a name.
const MaxNameLen = 512

// Name returns name in Unicode normalisation form C. It
// refuses an empty name, invalid UTF-8, and any control, format (zero-width
// joiners and spaces, bidirectional overrides, the byte-order mark), line or
// paragraph separator, or private-use character: those make two names that
// read the same compare different, or hide part of a name from a person
// approving it. The gateway uses it to refuse such names, and compares
// names byte for byte as the server listed them, finding look-alikes by
// their Skeleton.
func Name(name string) (string, error) {
	if name == "" {
		return "", errs.Invalidf("an empty name")
	}
	if !utf8.ValidString(name) {
		return "", errs.Invalidf("name %q is not valid UTF-8", name)
	}
	n := norm.NFC.String(name)
	if len(n) > MaxNameLen {
		return "", errs.Invalidf("name of %d bytes is longer than %d", len(n), MaxNameLen)
	}
	for i, r := range n {
		if badNameRune(r) {
			return "", errs.Invalidf("name %q holds %s at byte %d", n, runeDesc(r), i)
		}
	}
	return n, nil
}

// badNameRune reports the characters Name refuses.
func badNameRune(r rune) bool {
	switch {
	case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r),
		unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		return true
	case r == utf8.RuneError:
		return true
	// Characters that render as nothing but are not in Cf: the Hangul
	// fillers, the combining grapheme joiner and the Mongolian free variation
	// selectors and vowel separator, and variation selectors.
	case r == '\u115F', r == '\u1160', r == '\u3164', r == '\uFFA0', r == '\u034F',
		r >= '\u180B' && r <= '\u180F', r >= '\uFE00' && r <= '\uFE0F',
		r >= 0xE0100 && r <= 0xE01EF:
		return true
	}
	return false
}

func runeDesc(r rune) string {
	if unicode.Is(unicode.Cc, r) {
		return fmt.Sprintf("a control character (U+%04X)", r)
	}
	return fmt.Sprintf("an invisible or format character (U+%04X)", r)
}

// Skeleton is the form in which two names are taken for look-alikes:
// NFKC with Unicode case folding (FoldKey). Names are compared exactly
// (byte for byte) everywhere; Skeleton finds the names that a person, or
// a server matching names loosely, would take for one another: "GET-SUM"
// and "get-sum", the full-width "ｓｅｃｒｅｔ" and "secret", "café" in NFC
// and NFD.
func Skeleton(name string) string { return FoldKey(name) }
