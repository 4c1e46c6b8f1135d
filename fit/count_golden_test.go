package fit

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// countGoldenPath holds, for each text of countGoldenTexts, what the
// scanner gives it: a rewrite of the scanner for speed must give every
// text of it exactly the same thousandths, and every piece the same bounds,
// cost and attributes, or it is a change of the estimate and must say so.
const countGoldenPath = "testdata/count.golden"

// countGoldenTexts are the texts the golden file is written from: the
// corpus, the wide corpus's texts that live in testdata or are generated
// (not the ones cut from installed files, which differ between machines),
// and short texts at the edges of the scanner's eight-byte loads.
func countGoldenTexts(tb testing.TB) []corpusSample {
	tb.Helper()
	out := loadCorpus(tb)
	for _, s := range loadWide(tb) {
		if _, installed := wideFiles[s.class]; !installed {
			out = append(out, s)
		}
	}
	rng := rand.New(rand.NewPCG(23, 5))
	const alphabet = "aAeEtTsSxXzZ \t\n\r.,_-/(){}<>[]:;=@$#'\"0123456789éß中文한😀\u00a0\u2028"
	runes := []rune(alphabet)
	for i := 0; i < 400; i++ {
		var b strings.Builder
		for n := rng.IntN(40); n > 0; n-- {
			// Runs of one class and single bytes, so that words of every
			// length meet every neighbour.
			r := runes[rng.IntN(len(runes))]
			for k := 1 + rng.IntN(3)*rng.IntN(6); k > 0; k-- {
				b.WriteRune(r)
			}
		}
		out = append(out, corpusSample{class: "edge", name: fmt.Sprintf("%03d", i), text: b.String()})
	}
	return out
}

// countDigest is one line of the golden file for s: the scanner's
// thousandths (estimate and white-space extra) of the whole text, and a
// digest of the thousandths of each line, of the text cut at a few byte
// offsets (inside runes too) and of every piece the recording scan sees.
func countDigest(s corpusSample) string {
	total, extra := scanMilli(s.text, nil)
	h := fnv.New64a()
	put := func(vs ...int64) {
		for _, v := range vs {
			fmt.Fprintf(h, "%d,", v)
		}
	}
	for _, l := range strings.SplitAfter(s.text, "\n") {
		put(scanMilli(l, nil))
	}
	rng := rand.New(rand.NewPCG(uint64(len(s.text)), 1))
	for k := 0; k < 8 && len(s.text) > 0; k++ {
		at := rng.IntN(len(s.text))
		put(scanMilli(s.text[:at], nil))
		put(scanMilli(s.text[at:], nil))
	}
	rt, rx := scanMilli(s.text, func(p piece) { put(int64(p.start), int64(p.end), p.cost, int64(p.attr)) })
	put(rt, rx)
	return fmt.Sprintf("%s/%s %d %d %016x", s.class, s.name, total, extra, h.Sum64())
}

// TestCountGolden checks the scanner against testdata/count.golden
// (rewritten with -update).
func TestCountGolden(t *testing.T) {
	texts := countGoldenTexts(t)
	var got []string
	for _, s := range texts {
		got = append(got, countDigest(s))
	}
	if *update {
		if err := os.WriteFile(countGoldenPath, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(filepath.FromSlash(countGoldenPath))
	if err != nil {
		t.Fatalf("%v (run go test ./fit -run CountGolden -update)", err)
	}
	defer f.Close()
	var want []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		want = append(want, sc.Text())
	}
	if len(want) != len(got) {
		t.Fatalf("got %d texts, the golden file has %d", len(got), len(want))
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			bad++
			if bad <= 10 {
				t.Errorf("got %s, want %s", got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d texts differ from %s", bad, len(got), countGoldenPath)
	}
}

// TestDecodeRune: decodeRune is utf8.DecodeRuneInString on every sequence
// of three bytes that leads with a byte of 0xe0 to 0xf4 (and on those
// followed by a byte of each kind, and cut to two bytes).
func TestDecodeRune(t *testing.T) {
	check := func(x string) {
		r, w := decodeRune(x, 0)
		wr, ww := utf8.DecodeRuneInString(x)
		if r != wr || w != ww {
			t.Fatalf("decodeRune(%q) = %U, %d; want %U, %d", x, r, w, wr, ww)
		}
	}
	for b0 := 0xe0; b0 <= 0xf4; b0++ {
		for b1 := 0; b1 < 256; b1++ {
			for b2 := 0; b2 < 256; b2++ {
				s := string([]byte{byte(b0), byte(b1), byte(b2)})
				check(s)
				check(s[:2])
				if b0 < 0xf0 {
					check(s + "x")
					continue
				}
				for _, b3 := range []byte{0, 'x', 0x7f, 0x80, 0x9f, 0xbf, 0xc0, 0xff} {
					check(s + string([]byte{b3}))
				}
			}
		}
	}
}

// TestRuneClass: runeClass and isLetter, which read the blocks of
// punctClass from a table, agree with Unicode's tables on every rune.
func TestRuneClass(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if got, want := runeClass(r), unicodeClass(r); got != want {
			t.Fatalf("runeClass(%U) = %d, want %d", r, got, want)
		}
		if got, want := isLetter(r), unicode.IsLetter(r); cjkScript(r) == scOther && got != want {
			t.Fatalf("isLetter(%U) = %v, want %v", r, got, want)
		}
	}
}

// TestCountAllocs: Count allocates nothing, on a text short enough to be
// scanned without a memo and on one long enough to be scanned with one.
func TestCountAllocs(t *testing.T) {
	for _, text := range []string{"The kernel decides every call.\n", strings.Repeat("func (s *Server) Close() error { return s.ln.Close() }\n", 200)} {
		Count(text)
		if n := testing.AllocsPerRun(100, func() { Count(text) }); n != 0 {
			t.Errorf("Count of %d bytes: %v allocations, want 0", len(text), n)
		}
	}
}
