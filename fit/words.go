package fit

import (
	"strings"
	"unicode/utf8"
)

// wordTable is an open-addressing set of the common words: slot h mod size
// onward holds the high half of wordHash (never 0, as wordHash sets its low
// bit when it would be). 64 KiB: it stays in the cache while text is weighed.
var wordTable = func() (t [wordTableSize]uint32) {
	var hs []uint64
	for _, w := range strings.Fields(commonWords) {
		hs = append(hs, wordHash(w))
	}
	for _, w := range strings.Fields(upperWords) {
		hs = append(hs, upperHash(wordHash(w)))
	}
	for _, h := range hs {
		k, fp := h&(wordTableSize-1), fingerprint(h)
		for t[k] != 0 && t[k] != fp {
			k = (k + 1) & (wordTableSize - 1)
		}
		t[k] = fp
	}
	return t
}()

const wordTableSize = 1 << 14

// fingerprint is the part of a word's hash the table keeps; never 0.
func fingerprint(h uint64) uint32 { return uint32(h>>32) | 1 }

// upperHash is the hash the table holds a word in capitals of upperWords
// under: wordHash folds case, so the capitals get a hash of their own.
func upperHash(h uint64) uint64 {
	h = (h ^ 0x243f6a8885a308d3) * hashMul
	h ^= h >> 32
	return h | 1
}

// commonUpper reports whether the word in capitals of hash h (wordHash) is
// one of upperWords.
func commonUpper(h uint64) bool { return commonWord(upperHash(h)) }

// commonWord reports whether the word of hash h is in the table.
func commonWord(h uint64) bool {
	k, fp := h&(wordTableSize-1), fingerprint(h)
	for {
		v := wordTable[k]
		if v == fp {
			return true
		}
		if v == 0 {
			return false
		}
		k = (k + 1) & (wordTableSize - 1)
	}
}

// The range of CJK letters commonRunes may hold: kana, Han, Hangul.
const (
	cjkLo = 0x3040
	cjkHi = 0xd7b0
)

// runeTable marks the runes of commonRunes.
var runeTable = func() (t [(cjkHi - cjkLo + 63) / 64]uint64) {
	for _, r := range commonRunes {
		if r >= cjkLo && r < cjkHi {
			k := r - cjkLo
			t[k/64] |= 1 << (k % 64)
		}
	}
	return t
}()

func commonRune(r rune) bool {
	if r < cjkLo || r >= cjkHi {
		return false
	}
	k := r - cjkLo
	return runeTable[k/64]&(1<<(k%64)) != 0
}

// plausible marks the pairs of letters that occur in the common words: a
// word with a pair that never does (qx, zk) is more likely an identifier or
// an encoding than a word, and the tokenizer cuts it into more pieces.
var plausible = func() (t [26 * 26]bool) {
	for _, w := range strings.Fields(commonWords) {
		for i := 1; i < len(w); i++ {
			a, b := w[i-1]|0x20, w[i]|0x20
			if a >= 'a' && a <= 'z' && b >= 'a' && b <= 'z' {
				t[int(a-'a')*26+int(b-'a')] = true
			}
		}
	}
	return t
}()

// implausible reports whether the ASCII letters a, b never stand together in
// a common word.
func implausible(a, b byte) bool {
	return oddPair[(uint(a)&31)<<5|uint(b)&31] != 0
}

// oddPair is plausible for the scanner's hot loop, indexed by the low five
// bits of two letters (either case); row 0 is "no letter before".
var oddPair = func() (t [1024]uint8) {
	for a := 1; a <= 26; a++ {
		for b := 1; b <= 26; b++ {
			if !plausible[(a-1)*26+b-1] {
				t[a<<5|b] = 1
			}
		}
	}
	return t
}()

var _ = utf8.RuneError
