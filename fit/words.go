package fit

import "strings"

// commonWords are frequent English and programming words that the
// tokenizer takes as one token (with or without a leading space). The list
// is data, not code: it was picked from the training half of the corpus.
const commonWords = `
the of and to in is that for it as with was on be by this are or from at an not
which have has but can if will you all one we they their more when there been would
its also other so no any use used may new than only some these then them into do does
file files function return value values type string int error nil func package import
var const true false null self def class public private static void let const new
`

// wordTable is an open-addressing set of the FNV-1a hashes of the lower-case
// common words.
var wordTable = func() (t [wordTableSize]uint64) {
	for _, w := range strings.Fields(commonWords) {
		h := hashSeed
		for i := 0; i < len(w); i++ {
			h = (h ^ uint64(w[i]|0x20)) * hashMul
		}
		k := h & (wordTableSize - 1)
		for t[k] != 0 && t[k] != h {
			k = (k + 1) & (wordTableSize - 1)
		}
		t[k] = h
	}
	return t
}()

const wordTableSize = 1 << 13

func commonWord(h uint64) bool {
	k := h & (wordTableSize - 1)
	for {
		v := wordTable[k]
		if v == h {
			return true
		}
		if v == 0 {
			return false
		}
		k = (k + 1) & (wordTableSize - 1)
	}
}
