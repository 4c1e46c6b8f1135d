package fit

import "unicode"

// The rates below were calibrated against cl100k_base on the training half
// of testdata/corpus (see accuracy_test.go); the other half is held out to
// check that they were not fitted to it.

const (
	hashSeed uint64 = 14695981039346656037 // FNV-1a
	hashMul  uint64 = 1099511628211

	// longRun is the longest run of white space priced as the tokenizer
	// prices it; longer runs cost one token per CharsPerToken characters.
	longRun = 16
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
	if len(ws) > longRun {
		return int64((len(ws)+CharsPerToken-1)/CharsPerToken) * 1000
	}
	return 1000
}

// punctCost prices a run of punctuation (count characters), with a leading
// space when lead and the line breaks that follow it.
func punctCost(run string, count, breaks int, lead bool) int64 {
	c := int64(count+1) / 2 * 1000
	if c < 1000 {
		c = 1000
	}
	if count > 32 {
		c = int64(count) * 1000 / 4
	}
	return c
}

// prefixCost is what a prefix character adds to a word that is not common.
var prefixCost = [3]int64{0, 0, 400}

// commonCost[prefix][shape] prices a word of the common-word table.
var commonCost = [3][5]int64{
	{1000, 1000, 1000, 1000, 1000},
	{1000, 1000, 1000, 1000, 1000},
	{1400, 1400, 1400, 1400, 1400},
}

// maxCommonLen is the longest word the table holds.
const maxCommonLen = 14

// wordCost prices a word of ASCII letters that is not in the table.
func wordCost(letters int, shape, prefix uint8, humps int) int64 {
	var c int64
	switch shape {
	case shapeUpper:
		c = int64(letters) * 1000 / 2
	case shapeMixed:
		c = int64(humps+1)*1000 + int64(letters)*100
	default:
		c = 1000 + int64(letters)*1000/5
	}
	if c < 1000 {
		c = 1000
	}
	return c + prefixCost[prefix]
}

// asciiLettersCost prices the ASCII letters of a word that also holds other
// letters.
func asciiLettersCost(letters int) int64 { return int64(letters) * 300 }

// foreignRuneCost prices one letter outside ASCII.
func foreignRuneCost(r rune) int64 {
	switch {
	case unicode.Is(unicode.Han, r):
		return 1200
	case unicode.Is(unicode.Hiragana, r), unicode.Is(unicode.Katakana, r):
		return 1000
	case unicode.Is(unicode.Hangul, r):
		return 1100
	case r < 0x250: // Latin accents
		return 500
	}
	return 600
}
