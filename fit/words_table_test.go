package fit

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"math/bits"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

var updateWordTables = flag.Bool("update-word-tables", false, "rewrite words_table.go from words_list.go, words_upper.go and cl100k_base")

// TestWordTables checks that the tables words_table.go lays out statically
// are the ones the word lists give, so that a list rewritten by TestCalibrate
// cannot go out of step with what Count and Weigh look up. With
// -update-word-tables it rewrites the file instead.
func TestWordTables(t *testing.T) {
	words, pairs := buildWordTable(t)
	runes, odd, punct, short, caps := buildRuneTable(), buildOddPair(), buildPunctTable(t), buildShortTable(t), buildCapsTable(t)
	head, tail := buildCompoundTrigrams(t)
	long := buildPunctLong(t)
	if *updateWordTables {
		if err := os.WriteFile("words_table.go", wordTablesSource(t, words, pairs, head, tail, runes, odd, punct, long, short, caps), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	tests := []struct {
		name      string
		same      bool
		generated string
	}{
		{"wordTable", words == wordTable, "commonWords and upperWords"},
		{"pairTable", pairs == pairTable, "cl100k_base"},
		{"compoundHead", head == compoundHead, "commonWords and cl100k_base"},
		{"compoundTail", tail == compoundTail, "commonWords and cl100k_base"},
		{"runeTable", runes == runeTable, "commonRunes"},
		{"oddPair", odd == oddPair, "commonWords"},
		{"punctTable", punct == punctTable, "cl100k_base's vocabulary"},
		{"punctLong", slices.Equal(long.tokens, punctLong[:]), "cl100k_base's vocabulary"},
		{"punctLongKey", slices.Equal(long.keys, punctLongKey[:]), "cl100k_base's vocabulary"},
		{"punctLongHeads", long.heads == punctLongHeads, "cl100k_base's vocabulary"},
		{"shortTable", short == shortTable, "cl100k_base"},
		{"capsTable", caps == capsTable, "cl100k_base's vocabulary"},
		{"capsLongest", longestOf(caps) == capsLongest, "cl100k_base's vocabulary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.same {
				t.Fatalf("words_table.go's %s is not the one %s give: run go test ./fit -run TestWordTables -update-word-tables", tc.name, tc.generated)
			}
		})
	}
	for _, w := range strings.Fields(commonWords + upperWords) {
		if len(w) < minCommonLen || len(w) > maxCommonLen {
			t.Errorf("word list holds %q, of %d letters: Count looks up only words of %d to %d", w, len(w), minCommonLen, maxCommonLen)
		}
	}
	if n := occupied(wordTable[:]); n < len(strings.Fields(commonWords)) {
		t.Fatalf("wordTable holds %d words, fewer than the %d of commonWords", n, len(strings.Fields(commonWords)))
	}
}

func occupied(t []uint64) (n int) {
	for _, v := range t {
		if v != 0 {
			n++
		}
	}
	return n
}

// buildWordTable makes wordTable from the lists and the vocabulary: each
// word's fingerprint at the first free slot from its hash on, with its
// merge flags, which cl100k_base tells; and pairTable, the pair flags of
// the word at the same slot.
func buildWordTable(tb testing.TB) (t [wordTableSize]uint64, pairs [wordTableSize]uint32) {
	type entry struct {
		h            uint64
		flags, pairs uint32
	}
	var es []entry
	for _, w := range append(strings.Fields(commonWords), vocabularyWords(tb)...) {
		title := strings.ToUpper(w[:1]) + w[1:]
		es = append(es, entry{wordHash(w), mergeFlagsOf(tb, w) | mergeFlagsOf(tb, title)<<16, pairFlagsOf(tb, w) | pairFlagsOf(tb, title)<<16})
	}
	for _, w := range strings.Fields(upperWords) {
		es = append(es, entry{upperHash(wordHash(w)), mergeFlagsOf(tb, w), pairFlagsOf(tb, w)})
	}
	for _, e := range es {
		k, fp := e.h&(wordTableSize-1), fingerprint(e.h)
		for t[k] != 0 && uint32(t[k]) != fp {
			k = (k + 1) & (wordTableSize - 1)
		}
		t[k] = uint64(fp) | uint64(e.flags)<<32
		pairs[k] = e.pairs
	}
	return t, pairs
}

// buildCompoundTrigrams makes compoundHead and compoundTail: the first and
// last three letters of every word of the table that is one token alone in
// lower case, the words compoundParts cuts into.
func buildCompoundTrigrams(tb testing.TB) (head, tail [(trigrams + 63) / 64]uint64) {
	v := vocabulary(tb)
	for _, w := range append(strings.Fields(commonWords), vocabularyWords(tb)...) {
		if !v[w] || w != strings.ToLower(w) {
			continue
		}
		h, t := trigram(w, 0), trigram(w, len(w)-3)
		head[h/64] |= 1 << (h % 64)
		tail[t/64] |= 1 << (t % 64)
	}
	return head, tail
}

// pairFlagsOf is the pair flags of word w as it is spelled (see pairFlags):
// whether cl100k_base takes it alone, after a space and after each of
// mergeChars as exactly two tokens.
func pairFlagsOf(tb testing.TB, w string) uint32 {
	v := vocabulary(tb)
	two := func(s string) bool { return !v[s] && exactCount(tb, s) == 2 } // a token is one
	var f uint32
	if two(w) {
		f |= mergeBare
	}
	if two(" " + w) {
		f |= mergeSpace
	}
	for k := 0; k < len(mergeChars); k++ {
		if two(mergeChars[k:k+1] + w) {
			f |= 1 << (k + 2)
		}
	}
	return f
}

// vocabularyWords returns, in lower case and sorted, every word of
// minCommonLen to maxCommonLen ASCII letters that cl100k_base has as one
// token in lower, title or mixed case (camelCase identifiers such as
// "IEnumerable"), alone or after a space or one of mergeChars: which words
// are one token is the tokenizer's own, not any text's, so the table holds
// all of them. Words in capitals are upperWords' and capsTable's.
func vocabularyWords(tb testing.TB) []string {
	seen := map[string]bool{}
	for w := range vocabulary(tb) {
		if len(w) > 0 && (w[0] == ' ' || strings.IndexByte(mergeChars, w[0]) >= 0) {
			w = w[1:]
		}
		if len(w) < minCommonLen || len(w) > maxCommonLen || !asciiLetters(w) || strings.ToUpper(w) == w {
			continue
		}
		seen[strings.ToLower(w)] = true
	}
	out := make([]string, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// asciiLetters reports whether w is ASCII letters only.
func asciiLetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if letterInfo[w[i]]&liLetter == 0 {
			return false
		}
	}
	return true
}

// mergeFlagsOf is the merge flags of word w as it is spelled: whether
// cl100k_base takes it alone, after a space and after each of mergeChars as
// one token, that is, whether each is a token of its vocabulary.
func mergeFlagsOf(tb testing.TB, w string) uint32 {
	v := vocabulary(tb)
	var f uint32
	if v[w] {
		f |= mergeBare
	}
	if v[" "+w] {
		f |= mergeSpace
	}
	for k := 0; k < len(mergeChars); k++ {
		if v[mergeChars[k:k+1]+w] {
			f |= 1 << (k + 2)
		}
	}
	return f
}

// vocabularyOnce holds every token of cl100k_base as text, by id.
var vocabularyOnce = sync.OnceValue(func() []string {
	c, err := exactOnce()
	if err != nil {
		return nil
	}
	var v []string
	for id := uint(0); id < cl100kTokens; id++ {
		s, _ := c.Decode([]uint{id})
		v = append(v, s)
	}
	return v
})

// vocabularySet holds the same tokens as a set.
var vocabularySet = sync.OnceValue(func() map[string]bool {
	v := map[string]bool{}
	for _, s := range vocabularyOnce() {
		if s != "" {
			v[s] = true
		}
	}
	return v
})

// cl100kTokens is the number of ordinary tokens of cl100k_base.
const cl100kTokens = 100256

// vocabulary returns every token of cl100k_base as text: a string is one
// token when it is one of them (every token is the result of its merges).
func vocabulary(tb testing.TB) map[string]bool {
	tb.Helper()
	v := vocabularySet()
	if len(v) < cl100kTokens/2 {
		tb.Fatalf("cl100k_base's vocabulary: %d tokens", len(v))
	}
	return v
}

// buildRuneTable makes runeTable: a bit for each CJK letter of commonRunes.
func buildRuneTable() (t [(cjkHi - cjkLo + 63) / 64]uint64) {
	for _, r := range commonRunes {
		if r >= cjkLo && r < cjkHi {
			k := r - cjkLo
			t[k/64] |= 1 << (k % 64)
		}
	}
	return t
}

// buildOddPair makes oddPair: indexed by the low five bits of two letters
// (either case), 1 where the pair never stands together in a common word
// (qx, zk): such a word is more likely an identifier or an encoding, which
// the tokenizer cuts into more pieces. Row 0 is "no letter before".
func buildOddPair() (t [1024]uint8) {
	var plausible [26 * 26]bool
	for _, w := range strings.Fields(commonWords) {
		for i := 1; i < len(w); i++ {
			a, b := w[i-1]|0x20, w[i]|0x20
			if a >= 'a' && a <= 'z' && b >= 'a' && b <= 'z' {
				plausible[int(a-'a')*26+int(b-'a')] = true
			}
		}
	}
	for a := 1; a <= 26; a++ {
		for b := 1; b <= 26; b++ {
			if !plausible[(a-1)*26+b-1] {
				t[a<<5|b] = 1
			}
		}
	}
	return t
}

// wordTablesSource is words_table.go: the tables as composite literals of
// constants, which the compiler lays out in the binary's data.
func wordTablesSource(t *testing.T, words [wordTableSize]uint64, pairs [wordTableSize]uint32, head, tail [(trigrams + 63) / 64]uint64, runes [(cjkHi - cjkLo + 63) / 64]uint64, odd [1024]uint8, punct [1 << punctTableBits]uint64, long punctLongTables, short [1 << 12]uint16, caps [1 << capsTableBits]uint64) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by go test ./fit -run TestWordTables -update-word-tables; DO NOT EDIT.\n\npackage fit\n\n")
	b.WriteString("// wordTable: see words.go.\nvar wordTable = [wordTableSize]uint64{")
	writeSparse(&b, words[:], 3, "%d: %#016x, ")
	b.WriteString("}\n\n// pairTable: see pairFlags.\nvar pairTable = [wordTableSize]uint32{")
	writeSparse(&b, pairs[:], 4, "%d: %#x, ")
	for _, set := range []struct {
		name string
		bits []uint64
	}{{"compoundHead", head[:]}, {"compoundTail", tail[:]}} {
		fmt.Fprintf(&b, "}\n\n// %s: see trigramIn.\nvar %s = [(trigrams + 63) / 64]uint64{", set.name, set.name)
		writeSparse(&b, set.bits, 3, "%d: %#016x, ")
	}
	b.WriteString("}\n\n// runeTable marks the runes of commonRunes, bit r-cjkLo.\nvar runeTable = [(cjkHi - cjkLo + 63) / 64]uint64{")
	writeSparse(&b, runes[:], 3, "%d: %#016x, ")
	b.WriteString("}\n\n// oddPair: 1 where two letters (low five bits each; row 0 is no letter\n// before) never stand together in a common word.\nvar oddPair = [1024]uint8{")
	writeSparse(&b, odd[:], 12, "%d: %d, ")
	b.WriteString("}\n\n// punctTable: the tokens of cl100k_base made of ASCII punctuation; see punctTokens.\nvar punctTable = [1 << punctTableBits]uint64{")
	writeSparse(&b, punct[:], 3, "%d: %#x, ")
	fmt.Fprintf(&b, "}\n\n// punctLong: the tokens of cl100k_base made of ASCII punctuation longer than\n// maxShortToken, by their first two bytes, the longest first; see longPunctAt.\nvar punctLong = [%d]string{\n", len(long.tokens))
	for _, tok := range long.tokens {
		fmt.Fprintf(&b, "%q,\n", tok)
	}
	fmt.Fprintf(&b, "}\n\n// punctLongKey: the first two bytes of each token of punctLong, seven bits each.\nvar punctLongKey = [%d]uint16{", len(long.keys))
	for k, v := range long.keys {
		if k%12 == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%#x, ", v)
	}
	b.WriteString("\n}\n\n// punctLongHeads marks the keys of punctLongKey.\nvar punctLongHeads = [1 << 14 / 64]uint64{")
	writeSparse(&b, long.heads[:], 3, "%d: %#016x, ")
	b.WriteString("}\n\n// shortTable: the merge flags of every word of one or two ASCII letters; see shortClass.\nvar shortTable = [1 << 12]uint16{")
	writeSparse(&b, short[:], 6, "%d: %#04x, ")
	b.WriteString("}\n\n// capsTable: the tokens of cl100k_base made of capitals; see capsCost.\nvar capsTable = [1 << capsTableBits]uint64{")
	writeSparse(&b, caps[:], 3, "%d: %#x, ")
	b.WriteString("}\n\n// capsLongest: the length of the longest token of capsTable by its first two bytes; see capsTokens.\nvar capsLongest = [4096]uint8{")
	longest := longestOf(caps)
	writeSparse(&b, longest[:], 8, "%d: %d, ")
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		t.Fatalf("format words_table.go: %v", err)
	}
	return src
}

// writeSparse writes the elements of t that are not 0 as indexed elements of
// a composite literal, perLine a line.
func writeSparse[T uint8 | uint16 | uint32 | uint64](b *bytes.Buffer, t []T, perLine int, format string) {
	n := 0
	for k, v := range t {
		if v != 0 {
			if n%perLine == 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(b, format, k, v)
			n++
		}
	}
	b.WriteString("\n")
}

// buildPunctTable makes punctTable: every token of cl100k_base of up to
// eight bytes made of ASCII punctuation, with at most a leading space and
// any line breaks (punctOnly).
func buildPunctTable(tb testing.TB) (t [1 << punctTableBits]uint64) {
	copy(t[:], vocabTable(tb, punctTableBits, punctOnly))
	return t
}

// punctLongTables are punctLong, punctLongKey and punctLongHeads.
type punctLongTables struct {
	tokens []string
	keys   []uint16
	heads  [1 << 14 / 64]uint64
}

// buildPunctLong makes punctLong and its keys: every token of cl100k_base
// longer than maxShortToken made of ASCII punctuation, with at most a
// leading space and any line breaks (punctOnly), ordered by its first two
// bytes and then from the longest, as longPunctAt tries them.
func buildPunctLong(tb testing.TB) punctLongTables {
	vocabulary(tb)
	key := func(s string) uint16 { return uint16(s[0]&127)<<7 | uint16(s[1]&127) }
	var out punctLongTables
	for _, s := range vocabularyOnce() {
		if len(s) > maxShortToken && punctOnly(s) {
			out.tokens = append(out.tokens, s)
		}
	}
	sort.Slice(out.tokens, func(i, j int) bool {
		a, b := out.tokens[i], out.tokens[j]
		if key(a) != key(b) {
			return key(a) < key(b)
		}
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	for _, s := range out.tokens {
		k := key(s)
		out.keys = append(out.keys, k)
		out.heads[k/64] |= 1 << (k % 64)
	}
	return out
}

// buildCapsTable makes capsTable: every token of cl100k_base of two to
// eight bytes made of capitals (capsOnly).
func buildCapsTable(tb testing.TB) (t [1 << capsTableBits]uint64) {
	copy(t[:], vocabTable(tb, capsTableBits, capsOnly))
	return t
}

// vocabTable lays out the tokens of cl100k_base of two to eight bytes that
// keep takes as a table of 1<<bits slots for tableToken: each token by its
// bytes little-endian, at the first free slot from its hash on, in the order
// of ids.
func vocabTable(tb testing.TB, bits uint, keep func(string) bool) []uint64 {
	vocabulary(tb)
	t := make([]uint64, 1<<bits)
	for _, s := range vocabularyOnce() {
		if len(s) < 2 || len(s) > 8 || !keep(s) {
			continue
		}
		var v uint64
		for k := len(s) - 1; k >= 0; k-- {
			v = v<<8 | uint64(s[k])
		}
		k := (v * hashMul) >> (64 - bits)
		for t[k] != 0 && t[k] != v {
			k = (k + 1) & (1<<bits - 1)
		}
		t[k] = v
	}
	return t
}

// buildShortTable makes shortTable: the merge flags of every word of one
// or two ASCII letters, any case, at its letters' low six bits.
func buildShortTable(tb testing.TB) (t [1 << 12]uint16) {
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	for _, a := range []byte(letters) {
		t[uint(a&0x3f)<<6] = uint16(mergeFlagsOf(tb, string(a)))
		for _, b := range []byte(letters) {
			t[uint(a&0x3f)<<6|uint(b&0x3f)] = uint16(mergeFlagsOf(tb, string([]byte{a, b})))
		}
	}
	return t
}

// longestOf makes capsLongest from capsTable: for the low seven bits of a
// token's first byte and the low five of its second, its longest token.
func longestOf(caps [1 << capsTableBits]uint64) (t [4096]uint8) {
	for _, v := range caps {
		if v == 0 {
			continue
		}
		k := uint(v&127)<<5 | uint(v>>8&31)
		t[k] = max(t[k], uint8((bits.Len64(v)+7)/8))
	}
	return t
}

// capsOnly reports whether s is ASCII capitals after at most one leading
// byte the pre-split joins to a word (ASCII but a letter, a digit or a line
// break).
func capsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'A' && b <= 'Z' || i == 0 && len(s) > 1 && b < 0x80 && byteClass[b] != cLetter && byteClass[b] != cDigit && byteClass[b] != cBreak) {
			return false
		}
	}
	return true
}

// punctOnly reports whether s is ASCII punctuation, line breaks and at most
// a leading space.
func punctOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b == ' ' && i == 0 || b == '\n' || b == '\r' || b > ' ' && b < 0x7f && byteClass[b] == cOther) {
			return false
		}
	}
	return true
}

// regenerateTables is what a rewrite of a word list says to do next: the
// tables are built from the lists compiled into this test, the old ones.
const regenerateTables = "now run go test ./fit -run TestWordTables -update-word-tables"
