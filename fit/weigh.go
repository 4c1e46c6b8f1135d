package fit

import (
	"unicode"
	"unicode/utf8"
)

// Weigh estimates the tokens text costs a model: an approximation of a
// cl100k-class tokenizer (about 3% off on average) that is many times faster
// than running the real byte-pair encoding. It follows the tokenizer's
// pre-split of text into words, digit groups, punctuation and white space,
// and estimates the tokens of each piece from a small table of common words
// and calibrated rates. Long runs of white space are charged by their length
// (one token per CharsPerToken bytes): the real tokenizer takes a page of
// spaces for a few tokens, and a budget must not be filled with blank pages
// that cost the reader nothing but still cost the context.
//
// Weigh is additive at line starts: for text split just before a line that
// does not begin with a line break, the weights of the pieces add up to the
// weight of the whole, so parts of a document can be weighed once and summed.
func Weigh(text string) int {
	return milliToTokens(weighMilli(text, nil))
}

// Count is Weigh under the name other packages use for a token count; the
// numbers are the same.
func Count(text string) int { return Weigh(text) }

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

// piece describes one piece of the pre-split, for calibration only.
type piece struct {
	kind   pieceKind
	start  int
	end    int
	prefix uint8 // words: prefix kind (pfNone...); punct: 1 with a leading space
	shape  uint8 // words: shapeLower...
	common bool  // words: in the common-word table
	rough  bool  // words: too few vowels to be a word of a language (base64, hex, ids)
	cost   int64 // the estimate, in thousandths of a token
}

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

// runeClass classifies a non-ASCII rune as the tokenizer's pre-split does.
func runeClass(r rune) uint8 {
	switch {
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
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && w <= 1 {
		return cOther, 1
	}
	return runeClass(r), w
}

// weighMilli is the scanner behind Weigh. It returns the estimate in
// thousandths of a token; rec, when not nil, receives every piece (used by
// the calibration tests only).
func weighMilli(s string, rec func(piece)) int64 {
	var total int64
	n := len(s)
	i := 0
	for i < n {
		c, w := classAt(s, i)
		var p piece
		p.start = i
		switch c {
		case cLetter:
			// A word with no prefix (at the start, or after a digit or a
			// line break).
			p = scanWord(s, i, i, 0)
		case cDigit:
			j, runes := i+w, 1
			for j < n {
				c2, w2 := classAt(s, j)
				if c2 != cDigit {
					break
				}
				j += w2
				runes++
			}
			p = piece{kind: pkDigits, start: i, end: j, cost: digitCost(runes)}
		case cOther:
			if s[i] == '\'' && i+1 < n {
				if l := contraction(s, i); l > 0 {
					p = piece{kind: pkContraction, start: i, end: i + l, cost: 1000}
					break
				}
			}
			// One punctuation character directly before a letter joins
			// the word; otherwise a run of punctuation is one piece.
			if i+w < n {
				if c2, _ := classAt(s, i+w); c2 == cLetter {
					p = scanWord(s, i, i+w, prefixKind(s[i]))
					break
				}
			}
			p = scanPunct(s, i, i)
		case cSpace, cBreak:
			p = scanSpace(s, i)
		}
		total += p.cost
		if rec != nil {
			rec(p)
		}
		i = p.end
	}
	return total
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
	runes := 0
	for j < n {
		c, w := classAt(s, j)
		if c == cBreak {
			lastBreak = j + w
		} else if c != cSpace {
			break
		}
		last = j
		runes++
		j += w
	}
	if lastBreak > 0 {
		// Everything up to the last line break is one piece.
		return piece{kind: pkNewline, start: i, end: lastBreak, cost: breakCost(s[i:lastBreak])}
	}
	if j == n {
		return piece{kind: pkSpace, start: i, end: j, cost: spaceCost(runes)}
	}
	if runes > 1 {
		// All but the last space; the last is scanned on its own next.
		return piece{kind: pkSpace, start: i, end: last, cost: spaceCost(runes - 1)}
	}
	switch c, _ := classAt(s, j); c {
	case cLetter:
		return scanWord(s, i, j, prefixKind(s[i]))
	case cOther:
		if s[i] == ' ' {
			return scanPunct(s, i, j)
		}
	}
	return piece{kind: pkSpace, start: i, end: j, cost: spaceCost(1)}
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
func scanPunct(s string, from, at int) piece {
	n := len(s)
	j := at
	count := 0
	for j < n {
		c, w := classAt(s, j)
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
	return piece{kind: pkPunct, start: from, end: j, prefix: lead, cost: punctCost(count, breaks, lead == 1)}
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
	var h uint64 = hashSeed
	upper, lower, vowels, odd := 0, 0, 0, 0
	var prev byte
	var foreign int64 // thousandths for letters outside ASCII
	nonASCII := false
	for j < n {
		b := s[j]
		if b < 0x80 {
			cl := byteClass[b]
			if cl != cLetter {
				break
			}
			if b <= 'Z' {
				upper++
			} else {
				lower++
			}
			h = (h ^ uint64(b|0x20)) * hashMul
			vowels += int(isVowel[b])
			if prev != 0 && implausible(prev, b) {
				odd++
			}
			prev = b
			j++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[j:])
		if (r == utf8.RuneError && w <= 1) || !unicode.IsLetter(r) {
			break
		}
		nonASCII = true
		prev = 0
		foreign += foreignCost[scriptOf(r)]
		j += w
	}
	letters := upper + lower
	p := piece{kind: pkWord, start: from, end: j, prefix: prefix}
	switch {
	case nonASCII:
		p.shape = shapeForeign
	case upper == 0:
		p.shape = shapeLower
	case lower == 0:
		p.shape = shapeUpper
	case upper == 1 && s[at] <= 'Z':
		p.shape = shapeTitle
	default:
		p.shape = shapeMixed
	}
	if nonASCII {
		p.cost = foreign + int64(letters)*foreignCost[scASCII] + prefixCost[prefix]
		return p
	}
	if letters <= maxCommonLen && p.shape != shapeMixed && (p.shape != shapeUpper || letters <= 3) && commonWord(h) {
		p.common = true
		p.cost = commonCost[prefix][p.shape]
		return p
	}
	if vowels*4 < letters || odd > 0 {
		p.rough = true
	}
	if p.shape == shapeMixed {
		p.cost = mixedWordCost(s[at:j], prefix)
		return p
	}
	p.cost = wordCost(letters, p.shape, prefix, p.rough)
	return p
}

// mixedParts splits a camelCase or random-case word into its case segments
// ("getHTTPServer": get, HTTP, Server) and sums the prices each would have as
// a word of its own: of common words, of other words and of rough ones (with
// too few vowels). The first segment carries the word's prefix.
func mixedParts(w string, prefix uint8) (common, normal, rough int64) {
	n := len(w)
	pf := prefix
	for i := 0; i < n; {
		j := i + 1
		if w[i] <= 'Z' {
			for j < n && w[j] <= 'Z' {
				j++
			}
			switch {
			case j-i == 1:
				for j < n && w[j] > 'Z' {
					j++
				}
			case j < n:
				j-- // the last capital begins the next segment
			}
		} else {
			for j < n && w[j] > 'Z' {
				j++
			}
		}
		seg := w[i:j]
		var h uint64 = hashSeed
		vowels, upper, odd := 0, 0, 0
		for k := 0; k < len(seg); k++ {
			h = (h ^ uint64(seg[k]|0x20)) * hashMul
			vowels += int(isVowel[seg[k]])
			if k > 0 && implausible(seg[k-1], seg[k]) {
				odd++
			}
			if seg[k] <= 'Z' {
				upper++
			}
		}
		shape := shapeLower
		switch {
		case upper == len(seg) && len(seg) > 1:
			shape = shapeUpper
		case upper > 0:
			shape = shapeTitle
		}
		switch {
		case len(seg) <= maxCommonLen && (shape != shapeUpper || len(seg) <= 3) && commonWord(h):
			common += commonCost[pf][shape]
		case vowels*4 < len(seg) || odd > 0:
			rough += wordCost(len(seg), shape, pf, true)
		default:
			normal += wordCost(len(seg), shape, pf, false)
		}
		pf = pfNone
		i = j
	}
	return common, normal, rough
}

// mixedWordCost prices a camelCase or random-case word from its segments.
func mixedWordCost(w string, prefix uint8) int64 {
	c, n, r := mixedParts(w, prefix)
	return max(1000, (c*mixedCost[0]+n*mixedCost[1]+r*mixedCost[2])/1000+mixedCost[3])
}
