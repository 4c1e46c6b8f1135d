package fit

import "unicode"

// The rates in weightab.go were fitted against cl100k_base on the training
// samples of testdata/corpus by TestCalibrate (go test -run Calibrate
// -calibrate -update-rates); the held-out samples check that they were not
// fitted to the corpus alone. Costs are in thousandths of a token.

const (
	hashSeed uint64 = 14695981039346656037 // FNV-1a's
	hashMul  uint64 = 0x9e3779b97f4a7c15

	// longRun is the longest run of white space priced as the tokenizer
	// prices it (about one token); longer runs cost one token per
	// CharsPerToken characters, so a page of blanks is not nearly free.
	longRun = 32

	// maxTabLen is the longest word priced by the length table; longer
	// words are priced per letter.
	maxTabLen = 16

	// maxCommonLen is the longest word the common-word table may hold.
	maxCommonLen = 20

	// maxPunct is the longest run of punctuation priced by the table.
	maxPunct = 12

	// maxBreakLen is the longest white space ending in a line break priced
	// by the table.
	maxBreakLen = 8
)

// digitCost: digits go in groups of three, one token each.
func digitCost(runes int) int64 { return int64((runes+2)/3) * 1000 }

// spaceCost prices a run of spaces and tabs.
func spaceCost(runes int) int64 {
	if runes > longRun {
		return int64((runes+CharsPerToken-1)/CharsPerToken) * 1000
	}
	return 1000
}

// breakCost prices white space that ends in line breaks.
func breakCost(ws string) int64 {
	switch {
	case len(ws) > longRun:
		return int64((len(ws)+CharsPerToken-1)/CharsPerToken) * 1000
	case len(ws) > maxBreakLen:
		return breakTab[maxBreakLen]
	}
	return breakTab[len(ws)]
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
