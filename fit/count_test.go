package fit

import (
	"strings"
	"testing"
	"unicode"
)

// TestCountAndWeigh: Count follows the tokenizer on white space; Weigh is
// the same number except for runs longer than longRun, which it charges by
// their length, so a page of blanks cannot pass for a few tokens, and for
// long rules of punctuation, which it charges as runs of up to eight bytes.
func TestCountAndWeigh(t *testing.T) {
	tests := []struct {
		name string
		text string
		// same: Weigh equals Count; else Weigh is at least minWeight.
		same      bool
		minWeight int
	}{
		{name: "prose", text: "The kernel decides every call against a declared policy.\n", same: true},
		{name: "indented code", text: strings.Repeat("\n"+strings.Repeat(" ", 64)+"return x", 50), same: true},
		{name: "yaml indentation", text: strings.Repeat("a:\n  b:\n    c:\n      d: 1\n", 40), same: true},
		{name: "tabs", text: strings.Repeat("\t\t\t\tx := 1\n", 40), same: true},
		{name: "80 spaces", text: strings.Repeat(strings.Repeat(" ", 80)+"x\n", 10), same: true},
		{name: "page of spaces", text: strings.Repeat(" ", 8000), minWeight: 1000},
		{name: "spaces before a word", text: strings.Repeat(" ", 4000) + "x", minWeight: 500},
		{name: "blank lines", text: strings.Repeat("\n", 8000), minWeight: 1000},
		{name: "blank lines of spaces", text: strings.Repeat(strings.Repeat(" ", 200)+"\n", 40), minWeight: 1000},
		{name: "rules of equals signs", text: strings.Repeat("%%%"+strings.Repeat("=", 73)+"\n", 40), minWeight: 500},
		{name: "page of dashes", text: strings.Repeat("-", 8000), minWeight: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, w := Count(tt.text), Weigh(tt.text)
			if mc, mw := Measure(tt.text); mc != c || mw != w {
				t.Errorf("Measure = %d, %d; Count, Weigh = %d, %d", mc, mw, c, w)
			}
			if w < c {
				t.Errorf("Weigh %d < Count %d", w, c)
			}
			if tt.same && w != c {
				t.Errorf("Weigh %d, Count %d: want them equal on text with no long run", w, c)
			}
			if !tt.same && w < tt.minWeight {
				t.Errorf("Weigh %d, want at least %d (Count %d)", w, tt.minWeight, c)
			}
			// Count stays near the tokenizer on white space and rules alone.
			if exact := exactCount(t, tt.text); relErr(c, exact) > 0.25 && abs(c-exact) > 3 {
				t.Errorf("Count %d, cl100k %d", c, exact)
			}
		})
	}
}

func relErr(est, exact int) float64 {
	return float64(abs(est-exact)) / float64(max(exact, 1))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestCJKScript holds cjkScript to Unicode's tables: every rune it gives a
// script is a letter of that script, as scriptOf (which asks the tables)
// classes it.
func TestCJKScript(t *testing.T) {
	want := map[int]*unicode.RangeTable{scHan: unicode.Han, scKana: nil, scHangul: unicode.Hangul}
	for r := rune(0); r < 0x10000; r++ {
		sc := cjkScript(r)
		if sc == scOther {
			continue
		}
		if !unicode.IsLetter(r) {
			t.Fatalf("cjkScript(%U) = %d, but it is not a letter", r, sc)
		}
		if tab := want[sc]; tab != nil && !unicode.Is(tab, r) || tab == nil && !unicode.Is(unicode.Hiragana, r) && !unicode.Is(unicode.Katakana, r) {
			t.Fatalf("cjkScript(%U) = %d, which Unicode's tables do not say", r, sc)
		}
		if got := scriptOf(r); got != sc && got != sc-1 {
			t.Fatalf("cjkScript(%U) = %d, scriptOf = %d", r, sc, got)
		}
	}
}

// TestShortRough holds shortRough, which the scanner prices words of one and
// two letters by, to isRough.
func TestShortRough(t *testing.T) {
	letters := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for _, a := range letters {
		if got, want := shortRough(uint64(a), 1), isRough(string(a), a <= 'Z'); got != want {
			t.Fatalf("shortRough(%q) = %v, isRough = %v", a, got, want)
		}
		for _, b := range letters {
			w := string(a) + string(b)
			if got, want := shortRough(uint64(a)|uint64(b)<<8, 2), isRough(w, b <= 'Z'); got != want {
				t.Fatalf("shortRough(%q) = %v, isRough = %v", w, got, want)
			}
		}
	}
}
