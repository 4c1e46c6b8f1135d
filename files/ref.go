package files

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-run/airlock/errs"
)

// RefPrefix starts every file reference. The digest that follows is the
// SHA-256 of the file's bytes, in 64 lower-case hex digits.
const RefPrefix = "airlock-file:sha256:"

// Ref names a file by the SHA-256 of its bytes. The zero Ref names nothing
// and is never valid in a store call.
type Ref struct{ sum [sha256.Size]byte }

// RefOf returns the reference of data.
func RefOf(data []byte) Ref { return Ref{sha256.Sum256(data)} }

// String returns the reference in its one written form,
// airlock-file:sha256:<64 lower-case hex digits>.
func (r Ref) String() string { return RefPrefix + r.Hex() }

// Hex returns the digest alone, in lower-case hex.
func (r Ref) Hex() string { return hex.EncodeToString(r.sum[:]) }

// IsZero reports whether r is the zero Ref.
func (r Ref) IsZero() bool { return r == Ref{} }

// MarshalText writes the reference's written form.
func (r Ref) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses a reference strictly, as ParseRef does.
func (r *Ref) UnmarshalText(b []byte) error {
	p, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// ParseRef parses s strictly: the prefix exactly, then 64 lower-case hex
// digits and nothing else. Upper case, white space, a short or long digest
// are all refused, because a reference is compared and shown as a string and
// two spellings of one file would make two names for it.
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, RefPrefix)
	if !ok {
		return Ref{}, errs.Invalidf("file reference %s: want %s followed by 64 hex digits", quoteShort(s), RefPrefix)
	}
	if len(rest) != 2*sha256.Size {
		return Ref{}, errs.Invalidf("file reference %s: the digest has %d characters, want 64 hex digits", quoteShort(s), len(rest))
	}
	var r Ref
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return Ref{}, errs.Invalidf("file reference %s: character %d of the digest is not a lower-case hex digit", quoteShort(s), i+1)
		}
	}
	if _, err := hex.Decode(r.sum[:], []byte(rest)); err != nil {
		return Ref{}, errs.Invalidf("file reference %s: %v", quoteShort(s), err)
	}
	return r, nil
}

// IsRefLike reports whether s claims to be a file reference: it starts with
// the scheme. A value that claims to be one and does not parse is an error,
// never a plain string, so a mistyped reference is not passed on silently.
func IsRefLike(s string) bool { return strings.HasPrefix(s, "airlock-file:") }

// RefsIn returns the file references among the top-level string values of a
// tool call's arguments, sorted and without repeats. Only top-level values
// count: a reference nested in an object is data the tool reads, not a file
// handed to it. A value that starts with the scheme but does not parse is an
// Invalid error naming the argument.
func RefsIn(args map[string]any) ([]Ref, error) {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[Ref]bool{}
	var out []Ref
	for _, k := range keys {
		s, ok := args[k].(string)
		if !ok || !IsRefLike(s) {
			continue
		}
		r, err := ParseRef(s)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "argument %q", k)
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Hex() < out[j].Hex() })
	return out, nil
}

// quoteShort quotes s for an error message, cut so that a huge argument does
// not become a huge error line.
func quoteShort(s string) string {
	const max = 90
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}
