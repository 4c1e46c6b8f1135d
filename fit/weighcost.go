package fit

import "unicode"

// The rates in weightab.go were fitted against cl100k_base, all in one run,
// on the training samples of testdata/corpus and the fitted kinds of the
// wide corpus by TestCalibrate (go test ./fit -run Calibrate -calibrate
// -update-rates); the held-out samples check that they were not fitted to
// the corpus alone. The wide corpus (wide_test.go) holds whole kinds out of
// every fit, to measure the estimate on kinds of text it has never seen: dev
// kinds, watched while the rules are chosen, and final kinds, looked at only
// to report.
// What the tokenizer's vocabulary tells exactly (which prefixes merge with
// a common word, which runs of punctuation are one token) is in the tables
// of words_table.go, not fitted. Costs are in thousandths of a token.

const (
	hashSeed uint64 = 14695981039346656037 // FNV-1a's
	hashMul  uint64 = 0x9e3779b97f4a7c15

	// longRun is the longest run of white space Weigh charges as the
	// tokenizer does: cl100k takes up to 81 spaces for one token (and a tab
	// for a sixteenth of one), so indentation is well within it. Longer runs
	// weigh one token per CharsPerToken bytes, so a page of blanks is not
	// nearly free.
	longRun = 80

	// spaceRun and tabRun are how many spaces, and how many tabs, cl100k
	// takes as one token in a long run.
	spaceRun = 112
	tabRun   = 16

	// symbolCost3 and symbolCost4 price a symbol of three bytes (other
	// than punctuation of prose) and of four bytes (emoji): cl100k takes
	// them for about two and two and a half tokens, alone or in a run.
	symbolCost3 = 1900
	symbolCost4 = 2600

	// breakRun is how many line breaks in a row cl100k takes as one token.
	breakRun = 32

	// maxTabLen is the longest word priced by the length table; longer
	// words are priced per letter.
	maxTabLen = 16

	// maxCommonLen is the longest word the common-word table may hold, and
	// minCommonLen the shortest (TestWordTables holds the lists to it):
	// shorter words are priced without a look-up.
	maxCommonLen = 20
	minCommonLen = 3

	// maxPunct is the longest run of punctuation priced by the table.
	maxPunct = 12

	// maxBreakLen is the longest white space ending in a line break priced
	// by the table.
	maxBreakLen = 8
)

// digitCost: digits go in groups of three, one token each.
func digitCost(runes int) int64 { return int64((runes+2)/3) * 1000 }

// spaceCost prices a run of white space with no line break (runes in
// all, tabs of them tabs) as the tokenizer does.
func spaceCost(runes, tabs int) int64 {
	spaces := runes - tabs
	if tabs > 0 && spaces > 0 && tabs < len(mixedSpaces) && spaces <= int(mixedSpaces[tabs]) {
		return 1000
	}
	return int64(max(1, (spaces+spaceRun-1)/spaceRun+(tabs+tabRun-1)/tabRun)) * 1000
}

// mixedSpaces[tabs] is how many spaces after tabs tabs cl100k still takes
// with them as one token: indentation by tabs then spaces to align (C, C++,
// Perl, assembly) is one token a line, not one for the tabs and one for the
// spaces.
var mixedSpaces = [...]uint8{0, 17, 9, 8, 7, 7, 4, 3, 2, 2, 1}

// lengthCost is what Weigh charges for a long run of white space of n
// bytes.
func lengthCost(n int) int64 {
	return int64((n+CharsPerToken-1)/CharsPerToken) * 1000
}

// breakCost prices white space that ends in line breaks: short runs by the
// table; longer ones by their groups of line breaks, since the tokenizer
// takes a few spaces with the breaks that follow them, and up to breakRun
// breaks in a row, as one token (longer runs of spaces or tabs before the
// breaks cost as spaceCost prices them).
func breakCost(ws string) int64 {
	if len(ws) <= maxBreakLen {
		return breakTab[len(ws)]
	}
	var tokens int64
	breaks, spaces, tabs := 0, 0, 0
	flush := func() {
		tokens += int64((breaks + breakRun - 1) / breakRun)
		if spaces+tabs > 16 {
			tokens += spaceCost(spaces+tabs, tabs) / 1000
		}
		breaks, spaces, tabs = 0, 0, 0
	}
	for k := 0; k < len(ws); k++ {
		switch ws[k] {
		case '\n', '\r':
			breaks++
			continue
		case '\t':
			if breaks > 0 {
				flush()
			}
			tabs++
		default:
			if breaks > 0 {
				flush()
			}
			spaces++
		}
	}
	flush()
	return max(1, tokens) * 1000
}

// punctCost prices a run of punctuation of count characters, with a leading
// space when lead and breaks line breaks after it.
func punctCost(count, breaks int, lead bool) int64 {
	l := 0
	if lead {
		l = 1
	}
	br := min(breaks, 2)
	if count <= maxPunct {
		return punctTab[l][br][count]
	}
	return int64(count) * punctRate
}

// prefixCost is what a prefix adds to a word with letters outside ASCII.
var prefixCost = [numPrefix]int64{foreignCost[10], foreignCost[11], foreignCost[11], foreignCost[11]}

// Scripts of letters outside ASCII, for foreignCost.
const (
	scHanCommon = iota // a Han character the tokenizer takes as one token
	scHan
	scKanaCommon
	scKana
	scHangulCommon
	scHangul
	scCyrillic // and Greek, Armenian
	scLatin    // Latin letters outside ASCII
	scOther
	scASCII
)

// scriptOf classes a letter for foreignCost.
func scriptOf(r rune) int {
	switch {
	case r < 0x80:
		return scASCII
	case r < 0x250 || (r >= 0x1e00 && r < 0x1f00):
		return scLatin
	case r >= 0x370 && r < 0x590:
		return scCyrillic
	case r >= cjkLo && r < cjkHi:
		common := commonRune(r)
		if sc := cjkScript(r); sc != scOther {
			if common {
				sc-- // scHanCommon before scHan, and so on
			}
			return sc
		}
		switch {
		case unicode.Is(unicode.Han, r):
			if common {
				return scHanCommon
			}
			return scHan
		case unicode.Is(unicode.Hiragana, r), unicode.Is(unicode.Katakana, r):
			if common {
				return scKanaCommon
			}
			return scKana
		case unicode.Is(unicode.Hangul, r):
			if common {
				return scHangulCommon
			}
			return scHangul
		}
	}
	return scOther
}

// cjkScript is the script of a letter of the big blocks of CJK text, told
// by its range alone (no look-up in Unicode's tables, which costs more than
// the rest of pricing it): scHan, scKana or scHangul for the common and the
// other letters alike, and scOther for any other rune. Every rune of these
// ranges is a letter (TestCJKScript).
func cjkScript(r rune) int {
	switch {
	case r < 0x3041 || r > 0xd7a3:
		return scOther
	case r >= 0x4e00 && r <= 0x9fff:
		return scHan
	case r >= 0xac00:
		return scHangul
	case r <= 0x3096 || r >= 0x30a1 && r <= 0x30fa:
		return scKana
	}
	return scOther
}

// wordCost prices a word of ASCII letters in lower case, title case or
// capitals that is not in the common-word table.
func wordCost(letters int, shape, prefix uint8, rough bool) int64 {
	r := 0
	if rough {
		r = 1
	}
	if letters <= maxTabLen {
		return wordLen[prefix][shape][r][letters]
	}
	return wordLen[prefix][shape][r][maxTabLen] + int64(letters-maxTabLen)*wordRate[shape][r]
}
