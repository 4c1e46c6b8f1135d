package fit

import (
	"math/bits"
	"runtime"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Count estimates the tokens a cl100k-class tokenizer takes text for: an
// approximation (about 1% off on average over prose, code, Markdown, HTML,
// XML, JSON, YAML, TOML, CSV, SQL, logs, listings, diffs, stack traces,
// base64, hex, CJK text and emoji; see accuracy_test.go) that is many times
// faster than running the real byte-pair encoding. It follows the
// tokenizer's pre-split of text into words, digit groups, punctuation and
// white space exactly, and estimates the tokens of each piece from what the
// tokenizer's vocabulary tells (which of its forty thousand words and
// identifiers, and every word of one or two letters, are one token alone,
// after a space and after each common prefix such as "." "_" "(" "<" or a
// tab, and which are two; which runs of punctuation, and of capitals, are
// one token) and from rates calibrated per kind of piece. It is the number airlock reports as a text's tokens.
//
// Count is additive at line starts, as Weigh is.
func Count(text string) int {
	c, _ := scanAll(text)
	return milliToTokens(c)
}

// Weigh is what budgets, caps and offload thresholds are measured in: the
// Count of text, except that a run of white space longer than longRun
// (past what tokenizers take as a few tokens) is charged by its length, one
// token per CharsPerToken bytes, and a piece of punctuation longer than
// eight bytes at least as if the vocabulary had no longer token (see
// punctWeight). The real tokenizer takes a page of spaces for a few
// tokens, and a rule of 64 equals signs for one; a budget must not be
// filled with blank pages that cost the reader nothing but still cost the
// context. Ordinary indentation is charged as the tokenizer charges it, so
// Weigh and Count differ only on texts with such runs.
//
// Weigh is additive at line starts: for text split just before a line that
// does not begin with a line break, the weights of the pieces add up to the
// weight of the whole, so parts of a document can be weighed once and summed.
func Weigh(text string) int {
	return milliToTokens(weighAll(text))
}

// Measure returns Count and Weigh of text in one pass.
func Measure(text string) (count, weight int) {
	c, x := scanAll(text)
	return milliToTokens(c), milliToTokens(c + x)
}

// parallelMin is the size from which weighing is spread over the cores.
const parallelMin = 1 << 20

// weighAll is weighMilli of a whole text, on all cores when it is big.
func weighAll(s string) int64 {
	c, x := scanAll(s)
	return c + x
}

// scanAll is scanMilli of a whole text, on all cores when it is big: the
// text is cut at the start of lines that begin with a character that is not
// white space, where the estimate is additive.
func scanAll(s string) (count, extra int64) {
	if len(s) < parallelMin {
		return scanMilli(s, nil)
	}
	workers := min(runtime.GOMAXPROCS(0), maxWorkers)
	cuts := []int{0}
	for k := 1; k < workers; k++ {
		c := safeCut(s, k*len(s)/workers)
		if c > cuts[len(cuts)-1] && c < len(s) {
			cuts = append(cuts, c)
		}
	}
	cuts = append(cuts, len(s))
	w := make([][2]int64, len(cuts)-1)
	parallel(len(s), len(w), func(k int) int { return cuts[k+1] - cuts[k] }, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			w[k][0], w[k][1] = scanMilli(s[cuts[k]:cuts[k+1]], nil)
		}
	})
	for _, v := range w {
		count += v[0]
		extra += v[1]
	}
	return count, extra
}

// maxWorkers bounds the goroutines one weighing uses.
const maxWorkers = 8

// safeCut returns the first offset at or after k that starts a line whose
// first byte is printable ASCII other than a space, or len(s).
func safeCut(s string, k int) int {
	for k < len(s) {
		j := strings.IndexByte(s[k:], '\n')
		if j < 0 {
			return len(s)
		}
		k += j + 1
		if k < len(s) && s[k] > ' ' && s[k] < 0x7f {
			return k
		}
	}
	return len(s)
}

// parallel runs work over items 0..n-1 in contiguous ranges of about equal
// size (by size(k)) on up to GOMAXPROCS goroutines, when total (bytes) is
// big enough to be worth it. Results must not depend on the split.
func parallel(total, n int, size func(k int) int, work func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), maxWorkers, n)
	if total < parallelMin || workers < 2 {
		work(0, n)
		return
	}
	var wg sync.WaitGroup
	per := total/workers + 1
	lo, acc := 0, 0
	for k := 0; k < n; k++ {
		acc += size(k)
		if acc >= per || k == n-1 {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				work(lo, hi)
			}(lo, k+1)
			lo, acc = k+1, 0
		}
	}
	wg.Wait()
}

func milliToTokens(m int64) int {
	return int((m + 500) / 1000)
}

// pieceKind is the class of one piece of the pre-split.
type pieceKind uint8

const (
	pkWord pieceKind = iota
	pkDigits
	pkPunct
	pkNewline
	pkSpace
	pkContraction
)

// piece describes one piece of the pre-split, with its estimate: where it
// ends is all the scanner needs, the rest is for calibration. Four fields,
// so that the compiler keeps a piece in registers.
type piece struct {
	start int
	end   int
	cost  int64  // the estimate, in thousandths of a token
	attr  uint32 // kind, prefix, shape, merge class and flags: see the methods
}

// Bits of piece.attr.
const (
	atPrefix   = 4  // words: prefix kind (pfNone...); punct: 1 with a leading space
	atShape    = 8  // words: shapeLower...
	atMerge    = 12 // common words: merge class with the prefix (mcMerged...)
	atCommon   = 1 << 16
	atRough    = 1 << 17
	atShort    = 1 << 18 // words of one or two letters priced by shortTable
	atGreedy   = 1 << 19 // words in capitals priced by capsCost
	atCompound = 1 << 20 // words run together, priced by compoundPrice (their parts in the merge bits)
	atClass    = 21      // words run together: their compoundClass
)

func (p piece) kind() pieceKind { return pieceKind(p.attr & 15) }
func (p piece) prefix() uint8   { return uint8(p.attr >> atPrefix & 15) }
func (p piece) shape() uint8    { return uint8(p.attr >> atShape & 15) }
func (p piece) merge() uint8    { return uint8(p.attr >> atMerge & 15) }

// common reports a word of the common-word table.
func (p piece) common() bool { return p.attr&atCommon != 0 }

// short reports a word of one or two letters priced by shortClass, its
// class in the merge bits.
func (p piece) short() bool { return p.attr&atShort != 0 }

// rough reports a word (but camelCase) with too few vowels to be a word of
// a language (base64, hex, ids).
func (p piece) rough() bool { return p.attr&atRough != 0 }

// Byte classes of the scanner.
const (
	cOther  uint8 = iota // punctuation, symbols and control bytes
	cLetter              // ASCII letters
	cDigit
	cSpace // space, tab, vertical tab, form feed
	cBreak // \r \n
	cHigh  // the first byte of a multi-byte rune (or an invalid byte)
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = cLetter
		case c >= '0' && c <= '9':
			t[c] = cDigit
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			t[c] = cSpace
		case c == '\n' || c == '\r':
			t[c] = cBreak
		case c >= 0x80:
			t[c] = cHigh
		default:
			t[c] = cOther
		}
	}
	return t
}()

// isVowel marks the ASCII vowels (and y), both cases: a run of letters with
// few of them is an identifier or an encoding, not a word, and costs more.
var isVowel = func() (t [256]uint8) {
	for _, c := range "aeiouyAEIOUY" {
		t[c] = 1
	}
	return t
}()

// hiBits is the high bit of every byte of a word.
const hiBits = 0x8080808080808080

// letterInfo describes ASCII bytes for the word scanner: a letter, a
// capital, a vowel.
const (
	liLetter = 1 << iota
	liUpper
	liVowel
)

var letterInfo = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = liLetter
		t[c-'a'+'A'] = liLetter | liUpper
	}
	for _, c := range "aeiouy" {
		t[c] |= liVowel
		t[c-'a'+'A'] |= liVowel
	}
	return t
}()

// runeClass classifies a non-ASCII rune as the tokenizer's pre-split does.
func runeClass(r rune) uint8 {
	if c, ok := punctClass(r); ok {
		return c
	}
	return unicodeClass(r)
}

// isLetter is unicode.IsLetter of a rune with no script of cjkScript.
func isLetter(r rune) bool {
	if c, ok := punctClass(r); ok {
		return c == cLetter
	}
	return unicode.IsLetter(r)
}

// punctClass is runeClass of a rune of the blocks that hold most of the
// runes outside ASCII in prose and CJK text that are not letters: general
// punctuation (U+2000 to U+206F), CJK symbols and punctuation (U+3000 to
// U+303F) and full-width forms (U+FF00 to U+FF5F), from punctRunes, so that
// they are not looked up in Unicode's tables. ok is false for other runes.
func punctClass(r rune) (c uint8, ok bool) {
	switch {
	case uint(r-0x2000) < 0x70:
		return punctRunes[r-0x2000], true
	case uint(r-0x3000) < 0x40:
		return punctRunes[0x70+r-0x3000], true
	case uint(r-0xff00) < 0x60:
		return punctRunes[0xb0+r-0xff00], true
	case uint(r-0x1f300) < 0x1fb00-0x1f300:
		return cOther, true // pictographs and emoji: symbols all (TestRuneClass)
	}
	return 0, false
}

// punctRunes holds unicodeClass of the blocks of punctClass, one after
// another.
// Its value is in tables.go, written by TestTables (go test ./fit -run TestTables -update-tables).

// unicodeClass is runeClass by Unicode's tables.
func unicodeClass(r rune) uint8 {
	switch {
	case cjkScript(r) != scOther:
		return cLetter
	case unicode.IsLetter(r):
		return cLetter
	case unicode.IsNumber(r):
		return cDigit
	case r == 0x85 || r == 0x2028 || r == 0x2029:
		return cBreak
	case unicode.IsSpace(r):
		return cSpace
	}
	return cOther
}

// classAt returns the class of the rune at i and its width in bytes.
func classAt(s string, i int) (uint8, int) {
	c := byteClass[s[i]]
	if c != cHigh {
		return c, 1
	}
	r, w := decodeRune(s, i)
	if r == utf8.RuneError && w <= 1 {
		return cOther, 1
	}
	return runeClass(r), w
}

// decodeRune is utf8.DecodeRuneInString(s[i:]), with the runes of three
// bytes that lead with 0xe1 to 0xec (U+1000 to U+CFFF: CJK text, general
// punctuation), after which any continuation bytes are valid, and the runes
// of four bytes that lead with 0xf0 and then 0x90 to 0xbf (U+10000 to
// U+3FFFF: emoji) decoded in line.
func decodeRune(s string, i int) (rune, int) {
	if i+2 < len(s) {
		b0, b1, b2 := s[i], s[i+1], s[i+2]
		if b0-0xe1 < 0xec-0xe1+1 && b1&0xc0 == 0x80 && b2&0xc0 == 0x80 {
			return rune(b0&0x0f)<<12 | rune(b1&0x3f)<<6 | rune(b2&0x3f), 3
		}
		if b0 == 0xf0 && b1-0x90 < 0x30 && b2&0xc0 == 0x80 && i+3 < len(s) && s[i+3]&0xc0 == 0x80 {
			return rune(b1&0x3f)<<12 | rune(b2&0x3f)<<6 | rune(s[i+3]&0x3f), 4
		}
	}
	return utf8.DecodeRuneInString(s[i:])
}

// weighMilli is Weigh in thousandths of a token; rec, when not nil,
// receives every piece (used by the calibration tests only).
func weighMilli(s string, rec func(piece)) int64 {
	c, x := scanMilli(s, rec)
	return c + x
}

// scanMilli is the scanner behind Count and Weigh. It returns the estimate
// and what Weigh adds to it for long runs of white space, in thousandths of
// a token; rec, when not nil, receives every piece with its estimate.
func scanMilli(s string, rec func(piece)) (total, extra int64) {
	n := len(s)
	i := 0
	fast := rec == nil // no piece is recorded: the short paths may price
	var memo *wordMemo
	if fast && n >= memoMin {
		memo = memoPool.Get().(*wordMemo)
		defer memoPool.Put(memo)
	}
	for i < n {
		b := s[i]
		var p piece // every branch below sets all of it (declared here, so
		// that it is no state of the loop the compiler must keep)
		// The commonest pieces first: a word after a space (or after the
		// last tab of an indentation), punctuation after a space (" = ",
		// " {"), which take the space or tab as scanSpace would give it.
		if (b == ' ' || b == '\t') && i+1 < n {
			next := s[i+1]
			if letterInfo[next]&liLetter != 0 {
				if fast {
					if end, cost, ok := memoWord(s, i+1, prefixKind(b), mergeBit[b], b, memo); ok {
						total += cost
						i = end
						continue
					}
				}
				p = scanWord(s, i, i+1, prefixKind(b))
				total += p.cost
				if rec != nil {
					rec(p)
				}
				i = p.end
				continue
			}
			if next-'0' < 10 && fast {
				// A space or tab before digits is a piece of its own, one
				// token, as scanSpace prices it.
				total += 1000
				i++
				continue
			}
			if b == ' ' && byteClass[next] == cOther {
				if i+2 < n && fast && byteClass[s[i+2]] > cOther && byteClass[s[i+2]] < cBreak {
					// A space and one punctuation character before a
					// letter, digit or space (" = ", " {"): one token or
					// two, as scanPunct prices it.
					total += spacePunct[next]
					i += 2
					continue
				}
				p = scanPunct(s, i, i+1, memo)
				total += p.cost
				extra += punctExtra(s, p)
				if rec != nil {
					rec(p)
				}
				i = p.end
				continue
			}
		}
		c, w := byteClass[b], 1
		if c == cHigh {
			c, w = classAt(s, i)
		}
		switch c {
		case cLetter:
			// A word with no prefix (at the start, or after a digit or a
			// line break).
			if fast {
				if end, cost, ok := memoWord(s, i, pfNone, mergeBare, 'A', memo); ok {
					total += cost
					i = end
					continue
				}
			}
			p = scanWord(s, i, i, 0)
		case cDigit:
			j, runes := i+w, 1
			// Eight bytes at a time while they are ASCII digits; the loop
			// below takes the byte that ends the run, or a digit outside
			// ASCII.
			for j+8 <= n {
				k := bits.TrailingZeros64(^digitBits(load64(s, j))&hiBits) >> 3
				j += k
				runes += k
				if k < 8 {
					break
				}
			}
			for j < n {
				if d := s[j]; d < 0x80 { // ASCII, the common case
					if d-'0' >= 10 {
						break
					}
					j++
					runes++
					continue
				}
				c2, w2 := classAt(s, j)
				if c2 != cDigit {
					break
				}
				j += w2
				runes++
			}
			p = piece{start: i, end: j, cost: digitCost(runes), attr: uint32(pkDigits)}
		case cOther:
			if b == '\'' && i+1 < n {
				if l := contraction(s, i); l > 0 {
					p = piece{start: i, end: i + l, cost: 1000, attr: uint32(pkContraction)}
					break
				}
			}
			// One punctuation character directly before a letter joins
			// the word; otherwise a run of punctuation is one piece.
			if i+w < n {
				next := s[i+w]
				if letterInfo[next]&liLetter != 0 || next >= 0x80 && letterAt(s, i+w) {
					if fast {
						if end, cost, ok := memoWord(s, i+w, prefixKind(b), mergeBit[s[i+w-1]], b, memo); ok {
							total += cost
							i = end
							continue
						}
					}
					p = scanWord(s, i, i+w, prefixKind(b))
					break
				}
				if w == 1 && byteClass[next] > cOther && next != '\n' && next != '\r' && next < 0x80 {
					// One ASCII character alone: one token, as scanPunct
					// prices it.
					p = piece{start: i, end: i + 1, cost: 1000, attr: uint32(pkPunct)}
					break
				}
				if fast && w == 1 {
					if cost, ok := punctPair(s, i); ok {
						total += cost
						i += 2
						continue
					}
				}
			}
			p = scanPunct(s, i, i, memo)
			extra += punctExtra(s, p)
		case cSpace, cBreak:
			if fast {
				end, cost, ok := 0, int64(0), false
				if b == '\n' {
					end, cost, ok = lineStart(s, i)
				} else if b == ' ' || b == '\t' {
					end, cost, ok = blankRun(s, i)
				}
				if ok {
					total += cost
					i = end
					continue
				}
			}
			p = scanSpace(s, i)
			switch {
			case p.kind() == pkPunct:
				extra += punctExtra(s, p)
			case p.end-p.start > longRun && p.kind() != pkWord:
				extra += max(0, lengthCost(p.end-p.start)-p.cost)
			}
		}
		total += p.cost
		if rec != nil {
			rec(p)
		}
		i = p.end
	}
	return total, extra
}

// letterAt reports whether the rune at i is a letter.
func letterAt(s string, i int) bool {
	c, _ := classAt(s, i)
	return c == cLetter
}

// memoWord is shortWord of the word at at, whose prefix is the byte lead
// ('A' for none, as no letter is a prefix), remembered in memo (when not
// nil) for a word of one to seven ASCII letters (memoLong: up to fifteen)
// that an ASCII byte ends: the price of such a word is a function of its
// letters and its prefix byte alone, and the commonest words of a text
// come again and again, so most of them are priced by one look-up in a
// table that stays in the first-level cache. Words with capitals after
// their first letter, which shortWord does not price, are remembered with
// scanWord's price (see priceWord).
func memoWord(s string, at int, pf uint8, bit uint16, lead byte, memo *wordMemo) (end int, cost int64, ok bool) {
	if memo == nil || at+8 > len(s) {
		return shortWord(s, at, pf, bit)
	}
	v := load64(s, at)
	letter := letterBits(v)
	k := bits.TrailingZeros64(^letter&hiBits) >> 3
	if k == 8 {
		return memoLong(s, at, pf, bit, lead, memo, v, letter)
	}
	if v&hiBits != 0 || k == 0 {
		return shortWord(s, at, pf, bit)
	}
	caps := letter&^(v<<2)&wordMask[k&7]&^0x80 != 0 // capitals after the first letter
	key := v&wordMask[k&7] | uint64(lead)<<56       // never 0: a word has letters
	e := &memo.words[key*hashMul>>(64-memoBits)]
	if e.key == key {
		return at + k, e.cost, true
	}
	if end, cost, ok = priceWord(s, at, pf, bit, lead, caps); ok {
		*e = memoEntry{key: key, cost: cost}
	}
	return end, cost, ok
}

// priceWord prices, for memoWord and memoLong, the word of ASCII letters
// at at that an ASCII byte that is not a letter ends: by shortWord, or by
// scanWord when it has capitals after its first letter (camelCase,
// capitals), whose price is as much a function of its letters and its
// prefix byte lead, when that is ASCII. ok is false for such a word after
// a prefix outside ASCII, which the scanner prices.
func priceWord(s string, at int, pf uint8, bit uint16, lead byte, caps bool) (end int, cost int64, ok bool) {
	switch {
	case !caps:
		return shortWord(s, at, pf, bit)
	case lead >= 0x80:
		return 0, 0, false
	}
	p := scanWord(s, at-b2i(pf != pfNone), at, pf)
	return p.end, p.cost, true
}

// memoLong is memoWord for a word of eight letters or more, its first eight
// bytes v (letterBits letter): those of up to fifteen letters are
// remembered with their prefix byte.
func memoLong(s string, at int, pf uint8, bit uint16, lead byte, memo *wordMemo, v, letter uint64) (end int, cost int64, ok bool) {
	if at+16 > len(s) {
		return shortWord(s, at, pf, bit)
	}
	v2 := load64(s, at+8)
	letter2 := letterBits(v2)
	k := bits.TrailingZeros64(^letter2&hiBits) >> 3
	if (v|v2)&hiBits != 0 || k == 8 {
		return shortWord(s, at, pf, bit)
	}
	caps := letter&^(v<<2)&^0x80|letter2&^(v2<<2)&wordMask[k&7] != 0
	key := v2&wordMask[k&7] | uint64(lead)<<56
	e := &memo.long[(v^key)*hashMul>>(64-longMemoBits)]
	if e.key == key && e.head == v {
		return at + 8 + k, e.cost, true
	}
	if end, cost, ok = priceWord(s, at, pf, bit, lead, caps); ok {
		*e = longEntry{head: v, key: key, cost: cost}
	}
	return end, cost, ok
}

// longEntry is a slot of memoLong's table: the first eight letters of a
// word, the rest with its prefix byte (as memoWord's key), its price.
type longEntry struct {
	head, key uint64 // head 0: empty (a word has letters)
	cost      int64
}

// longMemoBits sizes memoLong's table: 512 slots, 12 KiB.
const longMemoBits = 9

// wordMemo holds memoWord's table and memoPunct's: direct-mapped by a hash
// of the key (the bytes of the word and its prefix, of the punctuation),
// each slot the last one priced there. A memo serves one scan at a time
// (memoPool holds them between scans) and is never cleared: its prices
// hold for any text.
type wordMemo struct {
	words [1 << memoBits]memoEntry
	long  [1 << longMemoBits]longEntry
	punct [1 << punctMemoBits]memoEntry
}

// memoPunct is punctTokens of the piece s[from:end] in thousandths,
// remembered in memo (when not nil) for a piece of two to seven bytes: the
// runs of punctuation of a text are of few kinds.
func memoPunct(s string, from, end int, memo *wordMemo) int64 {
	l := end - from
	if memo == nil || l > 7 || from+8 > len(s) {
		return punctTokens(s, from, end) * 1000
	}
	key := load64(s, from)&wordMask[l&7] | uint64(l)<<56 // the length: a piece may hold NUL bytes
	e := &memo.punct[key*hashMul>>(64-punctMemoBits)]
	if e.key != key {
		*e = memoEntry{key: key, cost: punctTokens(s, from, end) * 1000}
	}
	return e.cost
}

// punctMemoBits sizes memoPunct's table: 256 slots.
const punctMemoBits = 8

type memoEntry struct {
	key  uint64 // 0: empty
	cost int64
}

// memoBits sizes memoWord's table: 2048 slots, 32 KiB.
const memoBits = 11

// memoMin is the shortest text scanned with a memo: for shorter ones,
// fetching it costs more than it saves.
const memoMin = 4096

var memoPool = sync.Pool{New: func() any { return new(wordMemo) }}

// shortWord prices the word that begins at at with prefix pf (of its
// piece, before at) and merge flag bit (prefixBit, which the caller knows)
// when it is one to fifteen ASCII letters in lower or title case, or a lone
// capital, followed by an ASCII byte that is not a letter, all within s:
// the commonest words of prose and code. It prices exactly as scanWord
// does, reading the word in one or two eight-byte loads; ok is false for
// any other word, which scanWord prices.
func shortWord(s string, at int, pf uint8, bit uint16) (end int, cost int64, ok bool) {
	if at+8 > len(s) {
		return 0, 0, false
	}
	v := load64(s, at)
	if v&hiBits != 0 {
		return 0, 0, false
	}
	letter := letterBits(v)
	k := bits.TrailingZeros64(^letter&hiBits) >> 3
	if k == 0 {
		return 0, 0, false
	}
	// n letters in all; h the hash before its last k bytes, tail.
	n, h, tail := k, hashSeed^uint64(k), v
	caps := letter &^ (v << 2)
	if k == 8 {
		// Eight letters and more: up to fifteen, in a second load.
		if at+16 > len(s) {
			return 0, 0, false
		}
		v2 := load64(s, at+8)
		if v2&hiBits != 0 || caps&^0x80 != 0 {
			return 0, 0, false
		}
		letter2 := letterBits(v2)
		k = bits.TrailingZeros64(^letter2&hiBits) >> 3
		if k == 8 || letter2&^(v2<<2)&wordMask[k&7] != 0 {
			return 0, 0, false
		}
		n = 8 + k
		h = (hashSeed ^ uint64(n) ^ (v | 0x2020202020202020)) * hashMul
		h ^= h >> 29
		tail = v2
	}
	word := wordMask[k&7] // k < 8 here: the mask elides the bounds check
	if n < 8 {
		caps &= word
	}
	shape := shapeLower
	switch {
	case caps == 0:
	case caps != 0x80:
		return 0, 0, false
	case n == 1:
		shape = shapeUpper // a lone capital
	default:
		shape = shapeTitle
	}
	if n < minCommonLen {
		if bit != 0 {
			return at + n, shortCost[n-1][shortClass(v, n, bit)], true
		}
		return at + n, wordCost(n, shape, pf, shortRough(v, n)), true
	}
	if flags, slot, common := commonEntry(hashTail(h, tail&word|lowerMask[k&7])); common {
		// commonPrice, written out for the words of lower and title case
		// this sees, so that the commonest case costs no call.
		switch f := uint16(flags >> (16 * uint(shape&1))); {
		case f&bit != 0:
			return at + n, mergeCost[mcMerged][shape%3], true
		case f == 0:
			// Not a token in this case (see knownForm): priced below.
		case bit != 0:
			return at + n, unmergedPrice(f, slot, shape, bit), true
		default:
			return at + n, commonCost[pf][shape], true
		}
	}
	if shape == shapeLower && n >= compoundMin {
		if k, first := compoundParts(s, at, n); k > 1 {
			return at + n, compoundPrice(k, first, pf, bit), true
		}
	}
	return at + n, wordCost(n, shape, pf, isRough(s[at:at+n], false)), true
}

// prefixBit is the merge flag (mergeBit) of the prefix of a word whose
// letters begin at at, with prefix kind pf: mergeBare for none, and 0 for a
// prefix the flags do not track (one outside ASCII among them).
func prefixBit(s string, at int, pf uint8) uint16 {
	if pf == pfNone {
		return mergeBare
	}
	return mergeBit[s[at-1]]
}

// commonPrice prices a common word of n letters, shape shape, flags flags
// and slot slot of wordTable after a prefix of kind pf and merge flag bit:
// by whether the tokenizer has the prefix and the word as one token, and
// else whether as two (pairFlags), where the flags know (lower and title
// case, capitals of upperWords), else by the rates of its prefix kind.
func commonPrice(flags uint32, slot uint64, shape, pf uint8, bit uint16, n int) int64 {
	if bit == 0 || shape > shapeUpper || shape == shapeUpper && n <= 3 {
		return commonCost[pf][shape]
	}
	f := uint16(flags >> (16 * uint(shape&1)))
	if f&bit != 0 {
		return mergeCost[mcMerged][shape]
	}
	return unmergedPrice(f, slot, shape, bit)
}

// unmergedPrice is commonPrice of a word of form flags f not merged with
// its prefix. Without branches on the flags, which no predictor guesses: its
// class as an index of byMerge.
func unmergedPrice(f uint16, slot uint64, shape uint8, bit uint16) int64 {
	k := b2i(f&mergeBare != 0)<<1 | b2i(pairFlags(slot, shape)&bit != 0)
	return byMerge[shape][k]
}

// knownForm reports whether a word of the table with flags flags is a
// token in the form shape spells it: its lower or title case is one token
// somewhere (alone, or after a space or a prefix the flags track). The table
// folds case, so it also finds words that are tokens only in another case
// ("errorcode" of "errorCode"), which cost what other words cost. CamelCase
// and capitals are priced by their own rules.
func knownForm(flags uint32, shape uint8) bool {
	return shape > shapeTitle || uint16(flags>>(16*uint(shape&1))) != 0
}

// b2i is 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// byMerge[shape][bare<<1|two] is mergeCost laid out for commonPrice, for a
// word not merged with its prefix: whether the word alone is one token, and
// whether the prefix and the word are two.
var byMerge = func() (t [3][4]int64) {
	for sh := range t {
		t[sh] = [4]int64{mergeCost[mcSplit][sh], mergeCost[mcPair][sh], mergeCost[mcBareCut][sh], mergeCost[mcBare][sh]}
	}
	return t
}()

// mergeOf is mergeClass for the shapes the flags know: mcUnknown for
// camelCase and for capitals of three letters or fewer (held in the table
// by their lower-case form).
func mergeOf(flags uint32, slot uint64, shape uint8, bit uint16, n int) uint8 {
	if shape <= shapeTitle || shape == shapeUpper && n > 3 {
		return mergeClass(flags, pairFlags(slot, shape), shape, bit)
	}
	return mcUnknown
}

// letterBits sets the high bit of each byte of v (eight ASCII bytes) that
// is a letter: x >= 'a' and not x > 'z', for x the byte in lower case.
func letterBits(v uint64) uint64 {
	x := v | 0x2020202020202020
	return (x + 0x1f1f1f1f1f1f1f1f) &^ (x + 0x0505050505050505) & hiBits
}

// digitBits sets the high bit of each byte of v that is an ASCII digit: in
// the low seven bits at least '0' and not at least ':', and the high bit
// clear. (The low bits alone are added, so that no carry crosses a byte.)
func digitBits(v uint64) uint64 {
	x := v &^ hiBits
	return (x + 0x5050505050505050) &^ (x + 0x4646464646464646) &^ v & hiBits
}

// lineStart prices the commonest white space of code and prose: line
// breaks at i (one to maxBreakLen of them, "\n" alone), then an indentation
// of spaces or of tabs (none, one, or up to longRun and one), then a
// printable ASCII byte. It prices exactly as scanSpace does, in one pass:
// the breaks are a piece; all but the last space or tab of the indentation
// are a piece; the last belongs to what follows, so end is its offset. ok
// is false for any other white space, which scanSpace prices.
func lineStart(s string, i int) (end int, cost int64, ok bool) {
	m := 1 // line breaks
	for i+m < len(s) && s[i+m] == '\n' && m < maxBreakLen {
		m++
	}
	j := i + m
	ind := byte(' ')
	if j < len(s) && s[j] == '\t' {
		ind = '\t'
	}
	for j < len(s) && s[j] == ind {
		j++
	}
	k := j - i - m // the indentation
	if j == len(s) || s[j] <= ' ' || s[j] >= 0x7f || k-1 > longRun {
		return 0, 0, false
	}
	cost = breakTab[m]
	if k > 1 {
		tabs := 0
		if ind == '\t' {
			tabs = k - 1
		}
		cost += spaceCost(k-1, tabs)
	}
	return max(i+m, j-1), cost, true
}

// blankRun prices, as scanSpace does, white space at i that is spaces and
// tabs alone, up to longRun and one, before a printable ASCII byte that
// is not a space: all but the last space or tab are a piece, the last
// belongs to what follows (a tab alone before punctuation is a piece). ok
// is false for any other white space (and a space alone, which the scanner
// prices with what follows it), which scanSpace prices.
func blankRun(s string, i int) (end int, cost int64, ok bool) {
	j, tabs := i, 0
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		tabs += b2i(s[j] == '\t')
		j++
	}
	switch {
	case j == len(s) || s[j] <= ' ' || s[j] >= 0x7f || j-i-1 > longRun:
		return 0, 0, false
	case j-i == 1:
		if s[i] == ' ' {
			return 0, 0, false
		}
		return j, spaceCost(1, 0), true
	}
	tabs -= b2i(s[j-1] == '\t') // the last goes with what follows
	return j - 1, spaceCost(j-i-1, tabs), true
}

// contraction returns the length of the English contraction at s[i] ('s 't
// 're 've 'm 'll 'd, any case), or 0.
func contraction(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	a := s[i+1] | 0x20
	switch a {
	case 's', 't', 'm', 'd':
		return 2
	}
	if i+2 < len(s) {
		b := s[i+2] | 0x20
		if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
			return 3
		}
	}
	return 0
}

// scanSpace scans white space starting at i the way the tokenizer's
// pre-split does: white space that ends in line breaks is one piece; of a run
// of spaces before a word or punctuation the last space goes to what follows.
func scanSpace(s string, i int) piece {
	n := len(s)
	j := i
	lastBreak := -1
	last := i // start of the last white-space rune
	runes, tabs, lastTab := 0, 0, false
	for j < n {
		c, w := byteClass[s[j]], 1
		if c == cHigh {
			c, w = classAt(s, j)
		}
		if c == cBreak {
			lastBreak = j + w
		} else if c != cSpace {
			break
		}
		lastTab = s[j] == '\t'
		if lastTab {
			tabs++
		}
		last = j
		runes++
		j += w
	}
	if lastBreak > 0 {
		// Everything up to the last line break is one piece.
		return piece{start: i, end: lastBreak, cost: breakCost(s[i:lastBreak]), attr: uint32(pkNewline)}
	}
	if j == n {
		return piece{start: i, end: j, cost: spaceCost(runes, tabs), attr: uint32(pkSpace)}
	}
	if runes > 1 {
		// All but the last space; the last is scanned on its own next.
		if lastTab {
			tabs--
		}
		return piece{start: i, end: last, cost: spaceCost(runes-1, tabs), attr: uint32(pkSpace)}
	}
	switch c, _ := classAt(s, j); c {
	case cLetter:
		return scanWord(s, i, j, prefixKind(s[i]))
	case cOther:
		if s[i] == ' ' {
			return scanPunct(s, i, j, nil)
		}
	}
	return piece{start: i, end: j, cost: spaceCost(1, 0), attr: uint32(pkSpace)}
}

// Prefix kinds: what comes before the letters of a word in its piece.
const (
	pfNone  uint8 = iota
	pfSpace       // a space: " word" is mostly one token
	pfSoft        // punctuation the tokenizer often merges with a word: . _ ( / tab …
	pfHard        // punctuation it seldom merges: + : > @ …
	numPrefix
)

var prefixClass = func() (t [256]uint8) {
	for i := range t {
		t[i] = pfHard
	}
	for _, c := range ".-_/\t(<#[=\",{]\\" {
		t[c] = pfSoft
	}
	t[' '] = pfSpace
	return t
}()

// prefixKind classes the first byte of a word's prefix.
func prefixKind(b byte) uint8 { return prefixClass[b] }

// scanPunct scans a run of punctuation starting at from (at, when a leading
// space belongs to it, is the first punctuation byte), with the line breaks
// that directly follow it.
func scanPunct(s string, from, at int, memo *wordMemo) piece {
	n := len(s)
	j := at
	count := 0
	var sym int64 // what symbols outside ASCII add
	wide := false // a character outside ASCII is in the run
	for j < n {
		c, w := byteClass[s[j]], 1
		if c == cHigh {
			wide = true
			c, w = classAt(s, j)
			if c == cOther {
				if x := symbolCost(s[j:], w); x > 0 {
					// Not merged with its neighbours: priced alone.
					sym += x
					j += w
					continue
				}
			}
		}
		if c != cOther {
			break
		}
		j += w
		count++
	}
	breaks := 0
	for j < n && (s[j] == '\n' || s[j] == '\r') {
		j++
		breaks++
	}
	var lead uint8
	if at > from {
		lead = 1
	}
	if count == 0 && breaks > 0 {
		// Symbols priced alone do not merge with the breaks after them.
		sym += breakTab[min(breaks, maxBreakLen)]
	}
	if !wide && count > 0 {
		cost := int64(1000) // one byte is one token
		switch {
		case j-from > maxShortToken:
			cost = longPunctTokens(s, from, j) * 1000
		case j-from > 1:
			cost = memoPunct(s, from, j, memo)
		}
		return piece{start: from, end: j, cost: cost, attr: uint32(pkPunct) | uint32(lead)<<atPrefix}
	}
	return piece{start: from, end: j, cost: punctCost(count, breaks, lead == 1) + sym, attr: uint32(pkPunct) | uint32(lead)<<atPrefix}
}

// punctPair prices the piece at i when it is two ASCII bytes, punctuation
// and then punctuation or a line break (");" "{\n"), that the byte after
// them (if any) does not extend: one token or two, as scanPunct prices it,
// with no scan and no probe. ok is false for any other piece.
func punctPair(s string, i int) (cost int64, ok bool) {
	if i+2 > len(s) {
		return 0, false
	}
	a, b := s[i], s[i+1]
	cb := byteClass[b]
	if a >= 0x80 || cb != cOther && cb != cBreak || b >= 0x80 {
		return 0, false
	}
	if i+2 < len(s) {
		// A line break joins any piece of punctuation, more punctuation
		// joins one that has no break yet, and a byte outside ASCII may
		// be either.
		switch byteClass[s[i+2]] {
		case cBreak, cHigh:
			return 0, false
		case cOther:
			if cb == cOther {
				return 0, false
			}
		}
	}
	k := uint(a)<<7 | uint(b)
	return 2000 - 1000*int64(punctPairs[k/64&uint(len(punctPairs)-1)]>>(k%64)&1), true
}

// punctPairs marks the pairs of ASCII bytes a, b (bit a<<7|b) that are one
// token of punctTable, for punctPair.
// Its value is in tables.go, written by TestTables (go test ./fit -run TestTables -update-tables).

// spacePunct[c] is the price of a space and the punctuation character c
// alone in their piece, from punctTable, as punctTokens gives it.
// Its value is in tables.go, written by TestTables (go test ./fit -run TestTables -update-tables).

// maxShortToken is the longest token punctTable holds; pieces of
// punctuation longer than it are priced with the longer tokens of
// punctLong too.
const maxShortToken = 8

// longPunctTokens counts the tokens of s[i:end], a piece of ASCII
// punctuation longer than maxShortToken: the tokens of punctLong (rules of
// dashes, equals signs, stars, hashes and slashes of up to a hundred and
// more bytes, which the tokenizer's merges join whole wherever they stand),
// and punctTokens' longest matches between them. Far from the end of a
// run of one byte, no token longer than maxRunToken is taken: the merges
// pair equal halves, so a long run comes out in tokens of 64 bytes, not
// of the longest the vocabulary has.
func longPunctTokens(s string, i, end int) int64 {
	var n int64
	seg := i // where the stretch before the next long token begins
	for ; i+maxShortToken < end; i++ {
		k := uint16(s[i]&127)<<7 | uint16(s[i+1]&127)
		if punctLongHeads[k/64]>>(k%64)&1 == 0 {
			continue // no long token begins with these two bytes
		}
		longest := end
		if runOver(s, i, end, 2*maxRunToken) {
			longest = i + maxRunToken
		}
		if l := longPunctAt(s[i:longest], k); l > 0 {
			n += punctTokens(s, seg, i) + 1
			seg = i + l
			i = seg - 1
		}
	}
	return n + punctTokens(s, seg, end)
}

// maxRunToken is the longest token a long run of one byte comes out in.
const maxRunToken = 64

// runOver reports whether s[i:end] begins with more than n bytes equal to
// s[i].
func runOver(s string, i, end, n int) bool {
	if end-i <= n {
		return false
	}
	for k := i + 1; k <= i+n; k++ {
		if s[k] != s[i] {
			return false
		}
	}
	return true
}

// longPunctAt is the length of the longest token of punctLong that s
// begins with, or 0; k is its first two bytes, seven bits each.
func longPunctAt(s string, k uint16) int {
	lo, hi := 0, len(punctLongKey)
	for lo < hi { // the first token whose first two bytes are k
		m := int(uint(lo+hi) >> 1)
		if punctLongKey[m] < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for ; lo < len(punctLong) && punctLongKey[lo] == k; lo++ { // longest first
		if t := punctLong[lo]; strings.HasPrefix(s, t) {
			return len(t)
		}
	}
	return 0
}

// maxGreedy is the longest piece of punctuation Weigh charges by
// punctTokens; longer ones go by punctCost's rates (see punctWeight).
const maxGreedy = 24

// punctWeight is what Weigh charges for p, a piece of punctuation longer
// than maxShortToken: what it is charged as if the vocabulary had no token
// longer than that. The tokenizer takes a rule of 64 equals signs for one
// token, as it takes a run of spaces for a few; a budget charges such a
// run, which costs the reader next to nothing, by its runs of up to eight
// bytes, and past maxGreedy bytes by a rate per character.
func punctWeight(s string, p piece) int64 {
	t := s[p.start:p.end]
	body := strings.TrimRight(t, "\r\n")
	if len(body) == len(t) && p.end < len(s) && s[p.end] >= 0x80 {
		return p.cost // a symbol outside ASCII ends it: priced by punctCost's rates already
	}
	for k := 0; k < len(t); k++ {
		if t[k] >= 0x80 {
			return p.cost
		}
	}
	if len(t) <= maxGreedy {
		return punctTokens(s, p.start, p.end) * 1000
	}
	lead := int(p.prefix())
	return punctCost(len(body)-lead, len(t)-len(body), lead == 1)
}

// punctExtra is what Weigh adds to Count for p, a piece of punctuation:
// nothing unless it is longer than maxShortToken (see punctWeight).
func punctExtra(s string, p piece) int64 {
	if p.end-p.start <= maxShortToken {
		return 0
	}
	return max(0, punctWeight(s, p)-p.cost)
}

// punctTokens counts the tokens of s[i:end], a piece of ASCII punctuation
// (with its leading space and trailing line breaks, as the pre-split gives
// it), by taking, from the left, the longest run of up to eight bytes that
// is one token of cl100k_base (punctTable): the tokenizer's merges on
// punctuation come out as the longest match nearly always ("->{", "();\n",
// " */\n" are one token, "<__" two).
func punctTokens(s string, i, end int) int64 {
	return longestTokens(s, i, end, punctTable[:], punctTableBits, nil)
}

// capsTokens is punctTokens for a word in capitals s[i:end] with at most
// one prefix byte before them, by the tokens of capsTable; it tries no
// match longer than the longest token that begins with the same two bytes
// (capsLongest), so that most words cost a probe or two a token.
func capsTokens(s string, i, end int) int64 {
	return longestTokens(s, i, end, capsTable[:], capsTableBits, capsLongest[:])
}

// longestTokens counts the tokens of s[i:end] as longest matches, from the
// left, of the tokens of up to eight bytes of table (of 1<<bits slots; see
// tableToken); a byte no token starts with is a token alone. longest, when
// not nil, bounds the match by the longest token that begins with the same
// two bytes (see capsLongest).
func longestTokens(s string, i, end int, table []uint64, bits uint, longest []uint8) int64 {
	var n int64
	for ; i < end; n++ {
		l := min(8, end-i)
		if longest != nil && l > 1 {
			l = min(l, int(longest[(uint(s[i]&127)<<5|uint(s[i+1]&31))&4095]))
		}
		if l < 2 {
			i++
			continue
		}
		v := loadN(s, i, l)
		for l > 1 && !tableToken(v, table, bits) {
			l--
			v &= wordMask[l&7]
		}
		i += l
	}
	return n
}

// loadN reads the l bytes (one to eight) of s at i little-endian, the rest
// of the word 0.
func loadN(s string, i, l int) uint64 {
	var v uint64
	if i+8 <= len(s) {
		v = load64(s, i)
		if l < 8 {
			v &= wordMask[l&7]
		}
		return v
	}
	for k := l - 1; k >= 0; k-- {
		v = v<<8 | uint64(s[i+k])
	}
	return v
}

// punctToken reports whether the bytes of v (little-endian, up to eight,
// the rest 0) are one token of punctTable.
func punctToken(v uint64) bool { return tableToken(v, punctTable[:], punctTableBits) }

// tableToken reports whether v (bytes little-endian, the rest 0) is in
// table, an open-addressing set of 1<<bits slots, each value at the first
// free slot from the top bits of v*hashMul on.
func tableToken(v uint64, table []uint64, bits uint) bool {
	mask := uint64(len(table) - 1)
	k := (v * hashMul) >> (64 - bits) & mask
	for {
		x := table[k]
		if x == v {
			return true
		}
		if x == 0 {
			return false
		}
		k = (k + 1) & mask
	}
}

// punctTableBits sizes punctTable: 8192 slots, 64 KiB, for the five
// thousand tokens of cl100k_base made of ASCII punctuation (with a leading
// space, trailing line breaks) of up to eight bytes.
const punctTableBits = 13

// capsTableBits sizes capsTable: 16384 slots, 128 KiB, for the eight
// thousand tokens of cl100k_base of up to eight bytes made of capitals, with
// a leading byte that is not a letter, a digit or a line break or without.
const capsTableBits = 14

// symbolCost is what a symbol outside ASCII of w bytes at the start of s
// costs when the tokenizer does not take it as punctuation (0 when it
// does, and the symbol is priced with its run): the tokenizer has single tokens
// for the punctuation of prose (dashes, quotes, CJK and full-width
// punctuation) and box drawing, but cuts most other symbols (arrows,
// dingbats, emoji) into their bytes.
func symbolCost(s string, w int) int64 {
	switch {
	case w == 4:
		return symbolCost4
	case w < 3:
		return 0
	}
	switch b0, b1 := s[0], s[1]; {
	case b0 == 0xe2 && (b1 == 0x80 || b1 == 0x81 || b1 == 0x94 || b1 == 0x95):
		return 0 // U+2000-U+207F, U+2500-U+257F
	case b0 == 0xe3 && b1 == 0x80, b0 == 0xef && b1 >= 0xbc:
		return 0 // U+3000-U+303F, U+FF00-U+FFFF
	}
	return symbolCost3
}

// Word shapes.
const (
	shapeLower   uint8 = iota // lower case
	shapeTitle                // one capital then lower case
	shapeUpper                // all capitals
	shapeMixed                // camelCase and the like
	shapeForeign              // holds letters outside ASCII
)

// scanWord scans a word whose letters begin at at; from < at when a prefix
// character (of kind prefix) belongs to it.
func scanWord(s string, from, at int, prefix uint8) piece {
	n := len(s)
	j := at
	upper, letters := 0, 0
	var foreign int64 // thousandths for letters outside ASCII
	nonASCII := false
	// Eight bytes at a time while they are ASCII.
	for j+8 <= n {
		v := load64(s, j)
		if v&hiBits != 0 {
			break
		}
		letter := letterBits(v)
		k := bits.TrailingZeros64(^letter&hiBits) >> 3
		caps := letter &^ (v << 2) // letters whose case bit is clear
		if k < 8 {
			caps &= 1<<(8*k) - 1
		}
		upper += bits.OnesCount64(caps)
		letters += k
		j += k
		if k < 8 {
			break
		}
	}
	for j < n {
		f := letterInfo[s[j]]
		if f&liLetter != 0 {
			// The hot loop: ASCII letters.
			upper += int(f >> 1 & 1)
			letters++
			j++
			continue
		}
		if s[j] < 0x80 {
			break
		}
		r, w := decodeRune(s, j)
		sc := cjkScript(r)
		if sc == scOther && ((r == utf8.RuneError && w <= 1) || !isLetter(r)) {
			break
		}
		if sc == scOther {
			sc = scriptOf(r)
		} else if commonRune(r) {
			sc-- // the common letters of each script come just before it
		}
		nonASCII = true
		foreign += foreignCost[sc]
		j += w
	}
	lower := letters - upper
	var shape uint8
	switch {
	case nonASCII:
		shape = shapeForeign
	case upper == 0:
		shape = shapeLower
	case lower == 0:
		shape = shapeUpper
	case upper == 1 && s[at] <= 'Z':
		shape = shapeTitle
	default:
		shape = shapeMixed
	}
	p := piece{start: from, end: j, attr: uint32(pkWord) | uint32(prefix)<<atPrefix | uint32(shape)<<atShape}
	if nonASCII {
		p.cost = foreign + int64(letters)*foreignCost[scASCII] + prefixCost[prefix]
		return p
	}
	w := s[at:j]
	if letters < minCommonLen {
		if bit := prefixBit(s, at, prefix); bit != 0 {
			v := uint64(w[0])
			if letters == 2 {
				v |= uint64(w[1]) << 8
			}
			c := shortClass(v, letters, bit)
			p.attr |= atShort | uint32(c)<<atMerge
			p.cost = shortCost[letters-1][c]
			return p
		}
	}
	if letters <= maxCommonLen && letters >= minCommonLen {
		h := wordHashAt(s, at, j-at)
		if shape == shapeUpper && letters > 3 {
			h = upperHash(h)
		}
		if flags, slot, common := commonEntry(h); common && (shape != shapeUpper || letters > 3) && knownForm(flags, shape) {
			bit := prefixBit(s, at, prefix)
			p.attr |= atCommon | uint32(mergeOf(flags, slot, shape, bit, letters))<<atMerge
			p.cost = commonPrice(flags, slot, shape, prefix, bit, letters)
			return p
		}
	}
	if shape == shapeLower && letters >= compoundMin {
		if k, first := compoundParts(s, at, j-at); k > 1 {
			bit := prefixBit(s, at, prefix)
			p.attr |= atCompound | uint32(min(k, 15))<<atMerge | uint32(compoundClass(first, prefix, bit))<<atClass
			p.cost = compoundPrice(k, first, prefix, bit)
			return p
		}
	}
	if shape == shapeUpper && letters > 1 {
		// Capitals (mnemonics, registers, macros, SQL) but the common words
		// of upperWords: as the vocabulary's tokens of capitals cut them. (A
		// lone capital after a prefix the flags do not track goes by
		// wordCost, as shortWord prices it.)
		p.attr |= atGreedy
		p.cost = capsCost(s, from, at, j)
		return p
	}
	if shape == shapeMixed {
		p.cost = mixedWordCost(s, from, at, j, prefix, prefixBit(s, at, prefix))
		return p
	}
	rough := isRough(w, shape == shapeUpper)
	if rough {
		p.attr |= atRough
	}
	p.cost = wordCost(letters, shape, prefix, rough)
	return p
}

// compoundMin is the fewest letters of a word compoundParts tries to cut.
const compoundMin = 10

// compoundParts returns into how few words of the vocabulary (each one
// token alone in lower case, of minCommonLen letters or more) a word in
// lower case s[at:at+n] that is not one of them cuts, or 0 when it does not cut into
// them, with the flags of the first: names run together
// ("taskqueueaddrequest", "subnetgroup"), which the tokenizer takes word by
// word, not at the rates of an unknown word of their length.
func compoundParts(s string, at, n int) (parts int, first uint32) {
	w := s[at : at+n] // hashed in s, whose bytes past w let wordHashAt load whole words
	if n > maxCompound || n < compoundMin || !trigramIn(&compoundHead, w, 0) || !trigramIn(&compoundTail, w, n-3) {
		return 0, 0 // no word begins or ends it as it begins or ends
	}
	// ends has bit e set where a word may end: e is n, or w[e:] cuts into
	// words, and some word ends in the three letters before e.
	// best[i] is the fewest words w[i:] cuts into (0: none), next[i] the
	// length of the first of them; filled from the right.
	var best, next [maxCompound + 1]uint8
	ends := uint64(0)
	if trigramIn(&compoundTail, w, n-3) {
		ends = 1 << uint(n)
	}
	for i := n - minCommonLen; i >= 0; i-- {
		if i+3 < n && best[i+3] != 0 && trigramIn(&compoundTail, w, i) {
			ends |= 1 << uint(i+3)
		}
		if !trigramIn(&compoundHead, w, i) {
			continue // no word begins so: most places of a random string
		}
		// The ends within reach, from the nearest.
		for m := ends >> uint(i+minCommonLen) << uint(i+minCommonLen) & (1<<uint(i+maxCommonLen+1) - 1); m != 0; m &= m - 1 {
			e := bits.TrailingZeros64(m)
			rest := best[e] // 0 for e == n
			if best[i] != 0 && rest+1 >= best[i] {
				continue // no fewer words than a cut found already
			}
			if f, _, ok := commonEntry(wordHashAt(s, at+i, e-i)); ok && f&mergeBare != 0 {
				best[i], next[i] = rest+1, uint8(e-i)
			}
		}
	}
	if best[0] == 0 {
		return 0, 0
	}
	first, _, _ = commonEntry(wordHashAt(s, at, int(next[0])))
	return int(best[0]), first
}

// maxCompound is the longest word compoundParts cuts.
const maxCompound = 48

// compoundPrice prices a word cut into k words of the vocabulary, the first
// with flags first, after a prefix of kind prefix and merge flag bit: by
// whether the prefix and the first word are one token where the flags know,
// else by the rates of the prefix kind.
func compoundPrice(k int, first uint32, prefix uint8, bit uint16) int64 {
	c := compoundClass(first, prefix, bit)
	if k < len(compoundCost[c]) {
		return compoundCost[c][k]
	}
	return compoundCost[c][len(compoundCost[c])-1] + int64(k-len(compoundCost[c])+1)*1000
}

// compoundClass is the row of compoundCost of a word run together whose
// first word has flags first: 0 with no prefix or one that merges with the
// first word, 1 with one the flags track that does not, else 2 after soft
// punctuation and 3 after hard.
func compoundClass(first uint32, prefix uint8, bit uint16) int {
	switch {
	case prefix == pfNone || bit != 0 && uint16(first)&bit != 0:
		return 0
	case bit != 0:
		return 1
	case prefix == pfHard:
		return 3
	}
	return 2
}

// capsCost prices a word in capitals s[at:end] with its prefix s[from:at]
// by the tokens of capitals of capsTable, longest first (capsTokens), as the tokenizer's
// merges on capitals come out nearly always ("\tMOVQ" is "\tM" "OV" "Q",
// " NOSPLIT" " N" "OS" "PLIT"): an ASCII prefix joins the first token, one
// outside ASCII is a token of its own.
func capsCost(s string, from, at, end int) int64 {
	var alone int64
	if at-from > 1 {
		from, alone = at, 1
	}
	return (capsTokens(s, from, end) + alone) * 1000
}

// mixedParts splits a camelCase or random-case word s[at:end] (with its
// prefix s[from:at]) into its case segments ("getHTTPServer": get, HTTP,
// Server) and sums the prices each would have as a word of its own: of
// common words, of other words and of rough ones (with too few vowels). The
// first segment carries the word's prefix.
func mixedParts(s string, from, at, end int, prefix uint8, bit uint16) (common, normal, rough int64) {
	w := s[at:end]
	n := len(w)
	pf := prefix
	for i := 0; i < n; {
		// The segment w[i:j] and its shape, which the cut tells: a run of
		// capitals (but its last, when lower case follows), one capital
		// and the lower case after it, or lower case.
		j := i + 1
		shape := shapeLower
		if w[i] <= 'Z' {
			for j < n && w[j] <= 'Z' {
				j++
			}
			switch {
			case j-i == 1:
				for j < n && w[j] > 'Z' {
					j++
				}
				shape = shapeTitle
			case j < n:
				j-- // the last capital begins the next segment
			}
			if shape == shapeLower {
				shape = shapeUpper
				if j-i == 1 {
					shape = shapeTitle // a lone capital
				}
			}
		} else {
			for j < n && w[j] > 'Z' {
				j++
			}
		}
		seg := w[i:j]
		pre := 0 // prefix bytes the segment takes: the first takes the word's
		if i == 0 {
			pre = at - from
		}
		switch {
		case shape == shapeUpper && pre <= 1 && j-i+pre <= 8:
			// Capitals of up to eight bytes with their prefix ("LLVM" of
			// ";LLVMCore" is ";" "LL" "VM"): exactly as the vocabulary's
			// tokens of capitals cut them.
			common += capsTokens(s, at+i-pre, at+j) * 1000
		case len(seg) < minCommonLen && bit != 0:
			// One or two letters ("T" of "TException", "Id" of
			// "userId"): priced as the tokenizer has them.
			v := uint64(seg[0])
			if len(seg) == 2 {
				v |= uint64(seg[1]) << 8
			}
			common += shortCost[len(seg)-1][shortClass(v, len(seg), bit)]
		case len(seg) >= minCommonLen && len(seg) <= maxCommonLen && ((shape != shapeUpper || len(seg) <= 3) && commonForm(wordHashAt(s, at+i, j-i), shape) ||
			shape == shapeUpper && len(seg) > 3 && commonUpper(wordHashAt(s, at+i, j-i))):
			common += commonCost[pf][shape]
		case shape == shapeUpper:
			// Capitals ("HTTP" of "getHTTPServer", runs of base64) as the
			// vocabulary's tokens of capitals cut them.
			common += capsTokens(w, i, j) * 1000
		case isRough(seg, shape == shapeUpper):
			rough += wordCost(len(seg), shape, pf, true)
		default:
			normal += wordCost(len(seg), shape, pf, false)
		}
		pf, bit = pfNone, mergeBare
		i = j
	}
	return common, normal, rough
}

// mixedWordCost prices a camelCase or random-case word s[at:end], prefix
// s[from:at], from its segments.
func mixedWordCost(s string, from, at, end int, prefix uint8, bit uint16) int64 {
	c, n, r := mixedParts(s, from, at, end, prefix, bit)
	return max(1000, (c*mixedCost[0]+n*mixedCost[1]+r*mixedCost[2])/1000+mixedCost[3])
}

// isRough reports whether a word of ASCII letters has too few vowels, or a
// pair of letters no common word has, to be a word of a language: an
// identifier, an abbreviation or a piece of an encoding, which the tokenizer
// cuts into more pieces. Too few is none at all, or under one in four
// letters in a word in capitals (upper) or longer than six letters: short
// words of lower or title case with one vowel ("Chart", "script") are words.
func isRough(w string, upper bool) bool {
	vowels, prev, odd := uint(0), uint(0), uint8(0)
	for k := 0; k < len(w); k++ {
		cur := uint(w[k]) & 31 // the letter's place in the alphabet, either case
		vowels += vowelBits >> cur & 1
		odd |= oddPair[prev<<5|cur]
		prev = cur
	}
	return odd != 0 || vowels*4 < uint(len(w)) && (vowels == 0 || upper || len(w) > 6)
}

// shortClass is the merge class of a word of one or two ASCII letters (the
// first bytes of v) after a prefix of flag bit, as an index of shortCost:
// merged with the prefix (2, 3) or not, and whether the word alone is one
// token (1, 3). shortTable holds the flags of every such word, from
// cl100k_base: registers, abbreviations and hex pairs ("\tAX", "(DI", ".x")
// are priced as the tokenizer has them.
func shortClass(v uint64, n int, bit uint16) int {
	i := uint(v&0x3f) << 6
	if n == 2 {
		i |= uint(v>>8) & 0x3f
	}
	f := shortTable[i&(1<<12-1)]
	return b2i(f&bit != 0)<<1 | b2i(f&mergeBare != 0)
}

// shortRough is isRough of a word of one or two letters, the first bytes
// of v, without a loop: no vowel, or a pair of letters no common word has.
func shortRough(v uint64, n int) bool {
	a, b := uint(v)&31, uint(v>>8)&31
	if n == 1 {
		return vowelBits>>a&1 == 0
	}
	return (vowelBits>>a|vowelBits>>b)&1 == 0 || oddPair[a<<5|b] != 0
}

// vowelBits marks the places in the alphabet (a = 1) of the vowels and y.
const vowelBits = 1<<1 | 1<<5 | 1<<9 | 1<<15 | 1<<21 | 1<<25

// wordMask[n] selects the first n bytes of eight: a table, as a shift by a
// variable count costs more than a load.
var wordMask = [8]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff}

// lowerMask[n] sets the case bit of the first n bytes of a word.
var lowerMask = [8]uint64{0, 0x20, 0x2020, 0x202020, 0x20202020, 0x2020202020, 0x202020202020, 0x20202020202020}

// wordHash hashes the lower-case form of a word of ASCII letters eight bytes
// at a time (the common-word table holds these hashes). It is never 0.
func wordHash(w string) uint64 { return wordHashAt(w, 0, len(w)) }

// wordHashAt is wordHash of s[at:at+n], reading whole eight-byte words of s
// where s is long enough.
func wordHashAt(s string, at, n int) uint64 {
	h := hashSeed ^ uint64(n)
	for n >= 8 {
		h = (h ^ (load64(s, at) | 0x2020202020202020)) * hashMul
		h ^= h >> 29
		at += 8
		n -= 8
	}
	var v uint64
	if at+8 <= len(s) {
		v = load64(s, at) & (1<<(8*n) - 1)
	} else {
		for k := 0; k < n; k++ {
			v |= uint64(s[at+k]) << (8 * k)
		}
	}
	return hashTail(h, v|lowerMask[n])
}

// hashTail finishes wordHash with the last bytes v (at most seven).
func hashTail(h, v uint64) uint64 {
	h = (h ^ v) * hashMul
	h ^= h >> 32
	if h == 0 {
		h = 1
	}
	return h
}

// load64 reads eight bytes of s at i, little-endian. Slicing them first
// lets the compiler check the bounds once and read them as one word.
func load64(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}
