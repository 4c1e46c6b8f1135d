package fit

import (
	"flag"
	"fmt"
	"go/format"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// The exact tokenizer is the ground truth of these tests only: airlock
// never ships it (its vocabulary is megabytes and it is many times slower).

// fold picks which third of the corpus is held out (numbers n with n%3 ==
// fold); the shipped rates were fitted with fold 0. The other folds check
// that the method, not one split, meets the targets.
var fold = flag.Int("fold", 0, "which third of the corpus to hold out (0, 1 or 2)")

var calibrate = flag.Bool("calibrate", false, "print the per-piece statistics the estimator's rates come from")

var exactOnce = sync.OnceValues(func() (tokenizer.Codec, error) { return tokenizer.Get(tokenizer.Cl100kBase) })

func exactCodec(tb testing.TB) tokenizer.Codec {
	tb.Helper()
	c, err := exactOnce()
	if err != nil {
		tb.Fatalf("cl100k_base: %v", err)
	}
	return c
}

func exactCount(tb testing.TB, s string) int {
	n, err := exactCodec(tb).Count(s)
	if err != nil {
		tb.Fatalf("exact count: %v", err)
	}
	return n
}

// sample is one file of testdata/corpus.
type corpusSample struct {
	class, name string
	heldOut     bool
	text        string
}

// loadCorpus reads testdata/corpus. A sample whose number is a multiple of
// three is held out (see -fold): the rates were calibrated on the others.
func loadCorpus(tb testing.TB) []corpusSample {
	tb.Helper()
	var out []corpusSample
	classes, err := os.ReadDir("testdata/corpus")
	if err != nil {
		tb.Fatalf("corpus: %v", err)
	}
	for _, c := range classes {
		if !c.IsDir() || c.Name() == "corpusgen" {
			continue
		}
		files, err := filepath.Glob(filepath.Join("testdata/corpus", c.Name(), "*.txt"))
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			base := filepath.Base(f)
			n, _ := strconv.Atoi(strings.SplitN(base, "-", 2)[0])
			out = append(out, corpusSample{class: c.Name(), name: base, heldOut: n%3 == *fold, text: string(b)})
		}
	}
	if len(out) < 50 {
		tb.Fatalf("corpus has %d samples, want at least 50", len(out))
	}
	return out
}

type classErr struct {
	sum      float64
	n        int
	worst    float64
	worstOne string
}

func (c *classErr) add(name string, e float64) {
	c.sum += e
	c.n++
	if e > c.worst {
		c.worst, c.worstOne = e, name
	}
}

func (c *classErr) mean() float64 {
	if c.n == 0 {
		return 0
	}
	return c.sum / float64(c.n)
}

// TestAccuracy compares Count with cl100k_base over the corpus: the mean
// absolute error must be at most 3% and no class may be worse than 10% on
// average, on the training samples and on the held-out ones alike.
func TestAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("the exact tokenizer takes a few seconds over the corpus")
	}
	corpus := loadCorpus(t)
	train, held := map[string]*classErr{}, map[string]*classErr{}
	var all, allTrain, allHeld classErr
	for _, s := range corpus {
		exact := exactCount(t, s.text)
		est := Count(s.text)
		e := math.Abs(float64(est-exact)) / float64(max(exact, 1))
		m := train
		if s.heldOut {
			m = held
			allHeld.add(s.class+"/"+s.name, e)
		} else {
			allTrain.add(s.class+"/"+s.name, e)
		}
		if m[s.class] == nil {
			m[s.class] = &classErr{}
		}
		m[s.class].add(s.name, e)
		all.add(s.class+"/"+s.name, e)
		if testing.Verbose() && e > 0.03 {
			t.Logf("%s/%s: estimate %d, exact %d (%+.1f%%)", s.class, s.name, est, exact, 100*float64(est-exact)/float64(exact))
		}
	}
	var names []string
	for c := range train {
		names = append(names, c)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-12s %9s %9s %9s  %s\n", "class", "train", "held-out", "worst", "worst sample")
	for _, c := range names {
		h := held[c]
		if h == nil {
			h = &classErr{}
		}
		w, wn := train[c].worst, train[c].worstOne
		if h.worst > w {
			w, wn = h.worst, h.worstOne
		}
		fmt.Fprintf(&b, "%-12s %8.2f%% %8.2f%% %8.2f%%  %s\n", c, 100*train[c].mean(), 100*h.mean(), 100*w, wn)
	}
	fmt.Fprintf(&b, "%-12s %8.2f%% %8.2f%%  (all %d samples: %.2f%%)\n", "mean", 100*allTrain.mean(), 100*allHeld.mean(), all.n, 100*all.mean())
	t.Log(b.String())

	if all.mean() > 0.03 {
		t.Errorf("mean absolute error over the corpus %.2f%%, want at most 3%%", 100*all.mean())
	}
	if allHeld.mean() > 0.03 {
		t.Errorf("mean absolute error over the held-out samples %.2f%%, want at most 3%%", 100*allHeld.mean())
	}
	for _, c := range names {
		both := classErr{sum: train[c].sum, n: train[c].n}
		if h := held[c]; h != nil {
			both.sum += h.sum
			both.n += h.n
		}
		if both.mean() > 0.10 {
			t.Errorf("class %s: mean absolute error %.2f%%, want at most 10%%", c, 100*both.mean())
		}
	}
}

// TestCalibrate prints, for the training samples, what each kind of piece
// of the pre-split really costs next to the estimate, and the rate tables
// of weighcost.go fitted to them. Run it with -calibrate when changing the
// estimator; -update-words also rewrites the common-word table (words.go)
// from the training samples.
func TestCalibrate(t *testing.T) {
	if !*calibrate {
		t.Skip("run with -calibrate")
	}
	// The fitted kinds of the wide corpus train too; its held-out kinds,
	// like the corpus's held-out samples, are left out.
	corpus := append(loadCorpus(t), loadWide(t)...)
	cache := map[string]int{}
	count := func(s string) int {
		n, ok := cache[s]
		if !ok {
			n = exactCount(t, s)
			cache[s] = n
		}
		return n
	}
	type acc struct {
		exact, est float64
		n          int
	}
	stats := map[string]*acc{}
	var pieces []pieceObs
	wordFreq := map[string]map[string]bool{} // word -> samples it is in
	runeFreq := map[rune]int{}
	mixedFreq := map[string]map[string]bool{} // camelCase words -> samples they are in
	split := 0
	byClass := map[string]*acc{}
	for _, s := range corpus {
		if s.heldOut {
			continue
		}
		sum := 0
		// Each sample weighs the same, as in the accuracy test's mean.
		weight := 1 / float64(max(exactCount(t, s.text), 1))
		weighMilli(s.text, func(p piece) {
			txt := s.text[p.start:p.end]
			n := count(txt)
			sum += n
			ck := s.class + "/" + coarseKey(p)
			if byClass[ck] == nil {
				byClass[ck] = &acc{}
			}
			byClass[ck].exact += float64(n)
			byClass[ck].est += float64(p.cost) / 1000
			byClass[ck].n++
			key := pieceKey(p, txt)
			a := stats[key]
			if a == nil {
				a = &acc{}
				stats[key] = a
			}
			a.exact += float64(n)
			a.est += float64(p.cost) / 1000
			a.n++
			pieces = append(pieces, pieceObs{p: p, txt: txt, exact: n, w: weight})
			if p.kind() == pkWord && p.shape() == shapeForeign {
				for _, r := range txt {
					if r >= cjkLo && r < cjkHi {
						runeFreq[r]++
					}
				}
			}
			if p.kind() == pkWord {
				letters := txt
				if p.prefix() != 0 {
					_, w := utf8.DecodeRuneInString(txt)
					letters = txt[w:]
				}
				if p.shape() == shapeLower && len(letters) >= 3 {
					if wordFreq[letters] == nil {
						wordFreq[letters] = map[string]bool{}
					}
					wordFreq[letters][s.name] = true
				}
				if p.shape() == shapeMixed && len(letters) <= maxCommonLen {
					if mixedFreq[letters] == nil {
						mixedFreq[letters] = map[string]bool{}
					}
					mixedFreq[letters][s.name] = true
				}
			}
		})
		if ex := exactCount(t, s.text); ex != sum {
			split++
			t.Logf("%s/%s: pieces sum to %d, whole is %d", s.class, s.name, sum, ex)
		}
	}
	t.Logf("samples whose pieces do not add up to the whole: %d", split)
	var keys []string
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return stats[keys[i]].exact > stats[keys[j]].exact })
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-36s %8s %10s %10s %7s\n", "piece", "count", "exact", "estimate", "exact/n")
	for _, k := range keys {
		a := stats[k]
		fmt.Fprintf(&b, "%-36s %8d %10.0f %10.0f %7.3f\n", k, a.n, a.exact, a.est, a.exact/float64(a.n))
	}
	t.Log(b.String())
	b.Reset()
	keys = keys[:0]
	for k := range byClass {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := byClass[k]
		if math.Abs(a.est-a.exact) > 30 {
			fmt.Fprintf(&b, "%-28s %7d %8.0f %8.0f %+7.0f\n", k, a.n, a.exact, a.est, a.est-a.exact)
		}
	}
	t.Log("\nby class: pieces, exact, estimate, difference\n" + b.String())
	rates := fitRates(pieces)
	if *updateRates {
		src, err := format.Source([]byte(rates))
		if err != nil {
			t.Fatalf("weightab.go: %v", err)
		}
		if err := os.WriteFile("weightab.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote weightab.go")
	} else {
		t.Log(rates)
	}

	if *updateWordsPool {
		writeWordsFromPool(t, count)
	}
	if *updateUpperPool {
		writeUpperFromPool(t, count)
	}
	if *updateWords {
		type wc struct {
			w string
			n int
		}
		var ws []wc
		for w, in := range wordFreq {
			if len(in) >= 3 && count(" "+w) == 1 {
				ws = append(ws, wc{w, len(in)})
			}
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i].n > ws[j].n || ws[i].n == ws[j].n && ws[i].w < ws[j].w })
		ws = ws[:min(len(ws), maxWords)]
		// Identifiers of common APIs (innerHTML, getElementById) are one
		// token too.
		have := map[string]bool{}
		for _, w := range ws {
			have[w.w] = true
		}
		nMixed := 0
		for w, in := range mixedFreq {
			lw := strings.ToLower(w)
			if len(in) >= 2 && !have[lw] && (count(w) == 1 || count(" "+w) == 1 || count("."+w) == 1) {
				ws = append(ws, wc{lw, len(in)})
				have[lw] = true
				nMixed++
			}
		}
		t.Logf("%d camelCase identifiers", nMixed)
		sort.Slice(ws, func(i, j int) bool { return ws[i].w < ws[j].w })
		var list strings.Builder
		line := 0
		for _, w := range ws {
			if line+len(w.w) > 100 {
				list.WriteString("\n")
				line = 0
			}
			list.WriteString(w.w + " ")
			line += len(w.w) + 1
		}
		src := strings.Replace(wordsTemplate, "WORDS", strings.TrimSpace(list.String()), 1)
		var rs []rune
		for r, n := range runeFreq {
			if n >= 2 && count(string(r)) == 1 {
				rs = append(rs, r)
			}
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
		var rl strings.Builder
		for i, r := range rs {
			if i > 0 && i%40 == 0 {
				rl.WriteString("\n")
			}
			rl.WriteRune(r)
		}
		src = strings.Replace(src, "RUNES", rl.String(), 1)
		if err := os.WriteFile("words_list.go", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d words to words_list.go", len(ws))
		t.Log(regenerateTables)
	}
}

var updateUpperPool = flag.Bool("update-upper-pool", false, "with -calibrate: rewrite words_upper.go from text installed on this machine (not the corpus)")

var updateWordsPool = flag.Bool("update-words-pool", false, "with -calibrate: rewrite words_list.go from text installed on this machine (not the corpus)")

var updateRates = flag.Bool("update-rates", false, "with -calibrate: rewrite weightab.go from the training samples")

var updateWords = flag.Bool("update-words", false, "with -calibrate: rewrite words_list.go from the training samples")

// maxWords bounds the common-word table.
const maxWords = 3000

const wordsTemplate = `// Code generated by TestCalibrate -calibrate -update-words; DO NOT EDIT.

package fit

// commonWords are lower-case words that cl100k_base takes as one token after
// a space and that stand in at least three training samples of the corpus.
const commonWords = ` + "`" + `
WORDS
` + "`" + `

// commonRunes are the kana, Han and Hangul letters that cl100k_base takes as
// one token and that stand at least twice in the training samples.
const commonRunes = ` + "`" + `
RUNES
` + "`" + `
`

type pieceObs struct {
	p     piece
	txt   string
	exact int
	w     float64 // the observation's weight
}

// cell averages weighted observations.
type cell struct{ sum, w, n float64 }

func (c *cell) add(v, w float64) { c.sum += v * w; c.w += w; c.n++ }

// mean is the cell's mean when it has at least min observations.
func (c cell) mean(min float64) (float64, bool) {
	if c.n < min {
		return 0, false
	}
	return c.sum / c.w, true
}

// fitRates fits every table of weightab.go to the pieces of the training
// samples and returns the file.
func fitRates(obs []pieceObs) string {
	var common [numPrefix][4]cell
	var merge [numMerge][3]cell
	var compound [4][6]cell
	var short [2][4]cell
	var words [numPrefix][3][2][maxTabLen + 1]cell
	var pooled [3][2][maxTabLen + 1]cell
	var rate [3][2]cell // tokens per letter past maxTabLen (sum of extra tokens / extra letters)
	var punct [2][3][maxPunct + 1]cell
	var punctLong cell
	var breaks [maxBreakLen + 1]cell
	var mixedWords, long []pieceObs
	var mixed, foreign [][]float64
	var mixedY, foreignY, mixedW, foreignW []float64
	for _, o := range obs {
		p := o.p
		y := float64(o.exact)
		switch p.kind() {
		case pkPunct:
			n := utf8.RuneCountInString(strings.TrimRight(o.txt, "\r\n"))
			br := min(len(o.txt)-len(strings.TrimRight(o.txt, "\r\n")), 2)
			if p.prefix() == 1 {
				n--
			}
			if n <= maxPunct {
				punct[p.prefix()][br][n].add(y, o.w)
			} else {
				punctLong.add(y/float64(n), o.w)
			}
		case pkNewline:
			if len(o.txt) <= maxBreakLen {
				breaks[len(o.txt)].add(y, o.w)
			}
		case pkWord:
			if p.attr&atGreedy != 0 {
				continue // priced by the vocabulary, not by a rate
			}
			letters := o.txt
			if p.prefix() != 0 {
				_, w := utf8.DecodeRuneInString(o.txt)
				letters = o.txt[w:]
			}
			L := len(letters)
			rough := 0
			if p.rough() {
				rough = 1
			}
			if p.short() {
				// Priced by shortCost; the rates by length still learn
				// from them, as camelCase words' short segments go by
				// those rates.
				short[L-1][p.merge()].add(y, o.w)
			}
			switch {
			case p.shape() == shapeForeign:
				x := make([]float64, 12)
				for _, r := range letters {
					x[scriptOf(r)]++
				}
				x[10+min(int(p.prefix()), 1)] = 1
				foreign = append(foreign, x)
				foreignY = append(foreignY, y)
				foreignW = append(foreignW, o.w)
			case p.attr&atCompound != 0:
				compound[p.attr>>atClass&3][min(int(p.merge()), 5)].add(y-float64(max(0, int(p.merge())-5)), o.w)
			case p.common() && p.merge() != mcUnknown:
				merge[p.merge()][p.shape()].add(y, o.w)
			case p.common():
				common[p.prefix()][p.shape()].add(y, o.w)
			case p.shape() == shapeMixed:
				mixedWords = append(mixedWords, o)
			case L <= maxTabLen:
				words[p.prefix()][p.shape()][rough][L].add(y, o.w)
				pooled[p.shape()][rough][L].add(y, o.w)
			default:
				long = append(long, o)
			}
		}
	}
	var b strings.Builder
	b.WriteString("// Code generated by TestCalibrate -calibrate -update-rates; DO NOT EDIT.\n\npackage fit\n\n")
	// The tables of whole words, fitted next, price the segments of mixed
	// words; fit them first and apply them to the observations.
	prevCommon, prevWords := commonCost, wordLen
	defer func() { commonCost, wordLen = prevCommon, prevWords }()
	b.WriteString("// commonCost[prefix][shape]: a word of the common-word table.\nvar commonCost = [numPrefix][4]int64{\n")
	for pf, row := range writeGrid(&b, int(numPrefix), 4, func(r, c int) cell { return common[r][c] }, func(r, c int) float64 {
		if v, ok := common[r][0].mean(10); ok {
			return v
		}
		return 1
	}) {
		copy(commonCost[pf][:], row)
	}
	b.WriteString("}\n\n// mergeCost[class][shape]: a common word in lower case, title case or\n// capitals by its merge class with its prefix (mcMerged... mcSplit).\nvar mergeCost = [numMerge][3]int64{\n")
	writeGrid(&b, numMerge, 3, func(r, c int) cell { return merge[r][c] }, func(r, c int) float64 {
		if v, ok := merge[r][0].mean(10); ok {
			return v
		}
		return [numMerge]float64{1, 2, 3, 2, 3}[r]
	})
	b.WriteString("}\n\n// compoundCost[class][parts]: a word that cuts into parts words of the vocabulary (class: see compoundClass).\nvar compoundCost = [4][6]int64{\n")
	writeGrid(&b, 4, 6, func(r, c int) cell { return compound[r][c] }, func(r, c int) float64 {
		if c == 0 {
			return 0
		}
		return float64(c) + [4]float64{0, 1, 0.5, 1}[r]
	})
	b.WriteString("}\n\n// shortCost[letters-1][class]: a word of one or two letters by its class\n// (shortClass).\nvar shortCost = [2][4]int64{\n")
	writeGrid(&b, 2, 4, func(r, c int) cell { return short[r][c] }, func(r, c int) float64 { return [4]float64{float64(r + 2), 2, 1, 1}[c] })
	b.WriteString("}\n\n// wordLen[prefix][shape][rough][letters]: other words of ASCII letters.\nvar wordLen = [numPrefix][3][2][maxTabLen + 1]int64{\n")
	for pf := 0; pf < int(numPrefix); pf++ {
		b.WriteString("\t{\n")
		for sh := 0; sh < 3; sh++ {
			b.WriteString("\t\t{\n")
			for r := 0; r < 2; r++ {
				b.WriteString("\t\t\t{0, ")
				prev := 0.0
				for L := 1; L <= maxTabLen; L++ {
					v, ok := words[pf][sh][r][L].mean(30)
					if !ok {
						v, ok = pooled[sh][r][L].mean(30)
					}
					if !ok {
						// Too few words this long: a little more than the
						// next shorter ones.
						v = prev + [2]float64{0.12, 0.4}[r]
					}
					// Longer words never cost less: smooths thin cells.
					v = math.Max(v, prev)
					prev = v
					wordLen[pf][sh][r][L] = int64(1000 * v)
					fmt.Fprintf(&b, "%.0f, ", 1000*v)
				}
				b.WriteString("},\n")
			}
			b.WriteString("\t\t},\n")
		}
		b.WriteString("\t},\n")
	}
	for _, o := range long {
		letters := len(o.txt)
		if o.p.prefix() != 0 {
			_, w := utf8.DecodeRuneInString(o.txt)
			letters -= w
		}
		r := 0
		if o.p.rough() {
			r = 1
		}
		rate[o.p.shape()][r].add((float64(o.exact)-float64(wordLen[o.p.prefix()][o.p.shape()][r][maxTabLen])/1000)/float64(letters-maxTabLen), o.w)
	}
	b.WriteString("}\n\n// wordRate[shape][rough]: per letter of a word longer than maxTabLen.\nvar wordRate = [3][2]int64{")
	for sh := 0; sh < 3; sh++ {
		b.WriteString("{")
		for r := 0; r < 2; r++ {
			v, ok := rate[sh][r].mean(20)
			if !ok {
				v = [2]float64{0.12, 0.4}[r]
			}
			v = math.Max(v, 0.05)
			fmt.Fprintf(&b, "%.0f, ", 1000*v)
		}
		b.WriteString("}, ")
	}
	b.WriteString("}\n")
	for _, o := range mixedWords {
		letters := o.txt
		if o.p.prefix() != 0 {
			_, w := utf8.DecodeRuneInString(o.txt)
			letters = o.txt[w:]
		}
		c, n, r := mixedParts(o.txt, 0, len(o.txt)-len(letters), len(o.txt), o.p.prefix(), prefixBit(o.txt, len(o.txt)-len(letters), o.p.prefix()))
		mixed = append(mixed, []float64{float64(c) / 1000, float64(n) / 1000, float64(r) / 1000, 1})
		mixedY = append(mixedY, float64(o.exact))
		mixedW = append(mixedW, o.w)
	}
	m := leastSquares(mixed, mixedY, mixedW)
	fmt.Fprintf(&b, "\n// mixedCost: a camelCase or random-case word: factors of the prices of its common,\n// other and rough segments, then a constant.\nvar mixedCost = [4]int64{%.0f, %.0f, %.0f, %.0f}\n", 1000*m[0], 1000*m[1], 1000*m[2], 1000*m[3])
	f := leastSquares(foreign, foreignY, foreignW)
	b.WriteString("\n// foreignCost: a word with letters outside ASCII: per letter of each script (see scriptOf),\n// then with no prefix and with one.\nvar foreignCost = [12]int64{")
	for _, v := range f {
		fmt.Fprintf(&b, "%.0f, ", 1000*v)
	}
	b.WriteString("}\n\n// punctTab[lead][breaks][count]: a run of punctuation.\nvar punctTab = [2][3][maxPunct + 1]int64{\n")
	for l := 0; l < 2; l++ {
		b.WriteString("\t{\n")
		for br := 0; br < 3; br++ {
			b.WriteString("\t\t{0, ")
			prev := 1.0
			for n := 1; n <= maxPunct; n++ {
				v, ok := punct[l][br][n].mean(20)
				if !ok {
					v, ok = punct[l][0][n].mean(20)
				}
				if !ok {
					v = math.Max(prev, float64(n)*0.4)
				}
				prev = v
				fmt.Fprintf(&b, "%.0f, ", 1000*v)
			}
			b.WriteString("},\n")
		}
		b.WriteString("\t},\n")
	}
	pr, ok := punctLong.mean(10)
	if !ok {
		pr = 0.4
	}
	fmt.Fprintf(&b, "}\n\n// punctRate: per character of a run of punctuation longer than maxPunct.\nconst punctRate = %.0f\n", 1000*pr)
	b.WriteString("\n// breakTab[bytes]: white space that ends in line breaks.\nvar breakTab = [maxBreakLen + 1]int64{0, ")
	prev := 1.0
	for n := 1; n <= maxBreakLen; n++ {
		v, ok := breaks[n].mean(5)
		if !ok {
			v = prev
		}
		prev = v
		fmt.Fprintf(&b, "%.0f, ", 1000*v)
	}
	b.WriteString("}\n")
	return b.String()
}

// writeGrid writes the rows of a table of costs fitted to cells (their
// means in thousandths, fallback's value for a cell of fewer than ten
// observations) and returns them.
func writeGrid(b *strings.Builder, rows, cols int, at func(r, c int) cell, fallback func(r, c int) float64) [][]int64 {
	var out [][]int64
	for r := 0; r < rows; r++ {
		row := make([]int64, cols)
		b.WriteString("\t{")
		for c := 0; c < cols; c++ {
			v, ok := at(r, c).mean(10)
			if !ok {
				v = fallback(r, c)
			}
			row[c] = int64(1000 * v)
			fmt.Fprintf(b, "%.0f, ", 1000*v)
		}
		b.WriteString("},\n")
		out = append(out, row)
	}
	return out
}

// leastSquares solves min sum w_i (x_i.b - y_i)^2 by the normal equations.
func leastSquares(x [][]float64, y, w []float64) []float64 {
	if len(x) == 0 {
		return nil
	}
	k := len(x[0])
	a := make([][]float64, k)
	for i := range a {
		a[i] = make([]float64, k+1)
	}
	for r, row := range x {
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				a[i][j] += w[r] * row[i] * row[j]
			}
			a[i][k] += w[r] * row[i] * y[r]
		}
	}
	for i := 0; i < k; i++ {
		a[i][i] += 1e-12 // a column with no data gets 0, not NaN
	}
	for c := 0; c < k; c++ {
		piv := c
		for r := c + 1; r < k; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[piv][c]) {
				piv = r
			}
		}
		a[c], a[piv] = a[piv], a[c]
		for r := 0; r < k; r++ {
			if r == c || a[c][c] == 0 {
				continue
			}
			f := a[r][c] / a[c][c]
			for j := c; j <= k; j++ {
				a[r][j] -= f * a[c][j]
			}
		}
	}
	sol := make([]float64, k)
	for i := range sol {
		if a[i][i] != 0 {
			sol[i] = a[i][k] / a[i][i]
		}
	}
	return sol
}

func coarseKey(p piece) string {
	switch p.kind() {
	case pkWord:
		shapes := [...]string{"lower", "title", "upper", "mixed", "foreign"}
		r := ""
		if p.rough() {
			r = "-rough"
		}
		return fmt.Sprintf("word-%s-p%d-c%v%s", shapes[p.shape()], p.prefix(), p.common(), r)
	case pkPunct:
		return "punct"
	case pkNewline:
		return "newline"
	case pkSpace:
		return "space"
	case pkDigits:
		return "digits"
	}
	return "contraction"
}

func pieceKey(p piece, txt string) string {
	switch p.kind() {
	case pkWord:
		shapes := [...]string{"lower", "title", "upper", "mixed", "foreign"}
		l := len(strings.TrimLeft(txt, " \t"))
		if p.prefix() == 2 {
			l = len(txt) - 1
		}
		if l > 12 {
			l = 12
		}
		return fmt.Sprintf("word/p%d/%s/common=%v/len%02d", p.prefix(), shapes[p.shape()], p.common(), l)
	case pkDigits:
		return fmt.Sprintf("digits/len%d", min(len(txt), 9))
	case pkPunct:
		n := len(strings.TrimRight(txt, "\r\n"))
		if p.prefix() == 1 {
			n--
		}
		br := len(txt) - len(strings.TrimRight(txt, "\r\n"))
		return fmt.Sprintf("punct/lead%d/len%02d/br%d", p.prefix(), min(n, 12), min(br, 2))
	case pkNewline:
		return fmt.Sprintf("newline/len%02d", min(len(txt), 20))
	case pkSpace:
		return fmt.Sprintf("space/len%02d", min(len(txt), 20))
	}
	return "contraction"
}

// wordPool is where -update-words-pool finds common words: source and
// documentation installed on a Debian machine with Go, Python, Perl and
// Node. wordPoolFiles leaves out what held-out samples are cut from.
var wordPool = []struct{ dir, ext string }{
	{"/usr/local/go/src", ".go"},
	{"/usr/lib/python3.11", ".py"},
	{"/usr/share/perl/5.36.0", ".pm"},
	{"/usr/share/perl/5.36.0", ".pod"},
	{"/usr/share/doc", ".md"},
	{"/usr/share/doc", ".txt"},
	{"/usr/share/javascript", ".js"},
	{"/usr/lib/node_modules", ".js"},
}

// wordPoolRecord lists the directories the common-word lists were made
// from, with the extension and number of files read in each: written with
// the lists, read by TestWordPoolDisjoint.
const wordPoolRecord = "testdata/wordpool.txt"

// resolved is path with its symbolic links resolved, or path when that
// fails.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// heldOutSources returns the files held-out samples are cut from, resolved,
// each with the kind it feeds: every file a glob of a held-out kind of the
// wide corpus matches (not only those cut this time), the files testdata/wide
// records for its held-out kinds, and every file testdata/corpus was cut
// from (with -fold any of its samples may be held out).
func heldOutSources(tb testing.TB) map[string]string {
	tb.Helper()
	out := map[string]string{}
	for kind, globs := range wideFiles {
		if !wideHeldOut(kind) {
			continue
		}
		for _, g := range globs {
			files, _ := filepath.Glob(g)
			for _, f := range files {
				out[resolved(f)] = kind
			}
		}
	}
	modCache := os.Getenv("GOMODCACHE")
	if modCache == "" {
		modCache = filepath.Join(os.Getenv("HOME"), "go", "pkg", "mod")
	}
	for _, rec := range []string{"testdata/corpus/sources.txt", "testdata/wide/sources.txt"} {
		src, err := os.ReadFile(rec)
		if err != nil {
			tb.Fatal(err)
		}
		for _, l := range strings.Split(string(src), "\n") {
			name, desc, ok := strings.Cut(l, "\t")
			if !ok || rec == "testdata/wide/sources.txt" && !wideHeldOut(strings.SplitN(name, "/", 2)[0]) {
				continue
			}
			for _, f := range strings.Fields(strings.ReplaceAll(desc, "$GOMODCACHE", modCache)) {
				// Paths of listings (ls, find) name directories: their
				// files' text is not in the sample.
				if st, err := os.Stat(f); err == nil && !st.IsDir() {
					out[resolved(f)] = "corpus " + strings.SplitN(name, "/", 2)[0]
				}
			}
		}
	}
	return out
}

// wordPoolFiles returns the files of wordPool the common-word lists are made
// from, resolved, with their pool's extension: every file of a pool
// directory with its extension, but for those in a directory any held-out
// sample is cut from (heldOutSources), so that no held-out sample, nor a
// file beside it, shapes the lists.
func wordPoolFiles(tb testing.TB) (files []string, ext map[string]string) {
	tb.Helper()
	banned := map[string]bool{}
	for f := range heldOutSources(tb) {
		banned[filepath.Dir(f)] = true
	}
	ext = map[string]string{}
	for _, p := range wordPool {
		filepath.WalkDir(p.dir, func(path string, e os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if e.IsDir() && (e.Name() == "testdata" || e.Name() == "vendor") {
				return filepath.SkipDir
			}
			if e.IsDir() || !strings.HasSuffix(path, p.ext) {
				return nil
			}
			f := resolved(path)
			if banned[filepath.Dir(f)] || ext[f] != "" {
				return nil
			}
			ext[f] = p.ext
			files = append(files, f)
			return nil
		})
	}
	sort.Strings(files)
	return files, ext
}

// writeWordPoolRecord writes wordPoolRecord for files.
func writeWordPoolRecord(tb testing.TB, files []string, ext map[string]string) {
	tb.Helper()
	type key struct{ dir, ext string }
	n := map[key]int{}
	var keys []key
	for _, f := range files {
		k := key{filepath.Dir(f), ext[f]}
		if n[k] == 0 {
			keys = append(keys, k)
		}
		n[k]++
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].dir < keys[j].dir || keys[i].dir == keys[j].dir && keys[i].ext < keys[j].ext
	})
	var b strings.Builder
	b.WriteString("# The directories the common-word lists (words_list.go, words_upper.go) were made from, the extension\n# and the number of files read in each (written by TestCalibrate -update-words-pool)\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s\t%s\t%d\n", k.dir, k.ext, n[k])
	}
	if err := os.WriteFile(wordPoolRecord, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// poolWords calls word once a file for each run of ASCII letters of the
// files of minLen to maxCommonLen letters.
func poolWords(files []string, minLen int, word func(w string)) {
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil || len(b) > 4<<20 {
			continue
		}
		seen := map[string]bool{}
		text := string(b)
		for i := 0; i < len(text); {
			if letterInfo[text[i]]&liLetter == 0 {
				i++
				continue
			}
			j := i
			for j < len(text) && letterInfo[text[j]]&liLetter != 0 {
				j++
			}
			if w := text[i:j]; len(w) >= minLen && len(w) <= maxCommonLen && !seen[w] {
				seen[w] = true
				word(w)
			}
			i = j
		}
	}
}

// TestWordPoolDisjoint fails when a file a held-out sample is cut from, or
// a file beside it, is among the sources of the common-word lists
// (wordPoolRecord): the lists would know the held-out text's own words, and
// the held-out numbers would flatter the estimate.
func TestWordPoolDisjoint(t *testing.T) {
	rec, err := os.ReadFile(wordPoolRecord)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, l := range strings.Split(string(rec), "\n") {
		if dir, _, ok := strings.Cut(l, "\t"); ok && !strings.HasPrefix(l, "#") {
			dirs[dir] = true
		}
	}
	if len(dirs) < 100 {
		t.Fatalf("%s lists %d directories, want the hundreds the lists were made from", wordPoolRecord, len(dirs))
	}
	src := heldOutSources(t)
	if len(src) < 50 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("only %d files held-out samples are cut from are installed here", len(src))
		}
		t.Skipf("only %d files held-out samples are cut from are installed here", len(src))
	}
	leaks := map[string][]string{} // kind -> its files in the pool's directories
	for f, kind := range src {
		if dirs[filepath.Dir(f)] {
			leaks[kind] = append(leaks[kind], f)
		}
	}
	var kinds []string
	for k := range leaks {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		sort.Strings(leaks[k])
		t.Errorf("%s: %d files its held-out samples are cut from lie in directories the common-word lists were made from (%s): regenerate the lists (TestCalibrate -calibrate -update-words-pool -update-upper-pool)",
			k, len(leaks[k]), strings.Join(leaks[k][:min(len(leaks[k]), 3)], ", "))
	}
}

// writeWordsFromPool writes words_list.go: the lower-case words and
// camelCase identifiers that stand in many files of the pool and that
// cl100k_base takes as one token.
func writeWordsFromPool(t *testing.T, count func(string) int) {
	files, ext := wordPoolFiles(t)
	df := map[string]int{} // word -> files it is in
	poolWords(files, 3, func(w string) { df[w]++ })
	writeWordPoolRecord(t, files, ext)
	type wc struct {
		w string
		n int
	}
	var ws []wc
	for w, n := range df {
		if n >= poolMinFiles {
			ws = append(ws, wc{w, n})
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].n > ws[j].n || ws[i].n == ws[j].n && ws[i].w < ws[j].w })
	have := map[string]bool{}
	var keep []string
	for _, w := range ws {
		lw := strings.ToLower(w.w)
		if have[lw] || len(keep) >= maxPoolWords {
			continue
		}
		lower := lw == w.w
		mixed := !lower && strings.ToUpper(w.w) != w.w && !(w.w[0] <= 'Z' && strings.ToLower(w.w[1:]) == w.w[1:])
		switch {
		case lower && count(" "+w.w) == 1:
		case mixed && (count(w.w) == 1 || count(" "+w.w) == 1 || count("."+w.w) == 1):
		default:
			continue
		}
		have[lw] = true
		keep = append(keep, lw)
	}
	sort.Strings(keep)
	var list strings.Builder
	line := 0
	for _, w := range keep {
		if line+len(w) > 100 {
			list.WriteString("\n")
			line = 0
		}
		list.WriteString(w + " ")
		line += len(w) + 1
	}
	out := strings.Replace(poolWordsTemplate, "WORDS", strings.TrimSpace(list.String()), 1)
	// Keep the CJK runes of the current list.
	out = strings.Replace(out, "RUNES", commonRunes, 1)
	if err := os.WriteFile("words_list.go", []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d words from %d files of the pool to words_list.go", len(keep), len(files))
	t.Log(regenerateTables)
}

// poolMinFiles is how many files of the pool a word must stand in.
const poolMinFiles = 8

// maxPoolWords bounds the common-word table.
const maxPoolWords = 6000

const poolWordsTemplate = `// Code generated by TestCalibrate -calibrate -update-words-pool; DO NOT EDIT.

package fit

// commonWords are lower-case words and camelCase identifiers that cl100k_base
// takes as one token and that stand in at least eight files of Go, Python,
// Perl and JavaScript sources and documentation (none in a directory a
// held-out sample is cut from; testdata/wordpool.txt lists the directories).
const commonWords = ` + "`" + `
WORDS
` + "`" + `

// commonRunes are the kana, Han and Hangul letters that cl100k_base takes as
// one token and that stand at least twice in the training samples.
const commonRunes = ` + "`" + `RUNES` + "`" + `
`

// writeUpperFromPool writes words_upper.go: the words in capitals (SQL and
// shell keywords, constants' parts) that stand in many files of the pool and
// that cl100k_base takes as one token, alone or after a space.
func writeUpperFromPool(t *testing.T, count func(string) int) {
	files, _ := wordPoolFiles(t)
	df := map[string]int{}
	poolWords(files, 4, func(w string) {
		if strings.ToUpper(w) == w {
			df[w]++
		}
	})
	var keep []string
	for w, n := range df {
		if n >= poolMinFiles && (count(w) == 1 || count(" "+w) == 1) {
			keep = append(keep, w)
		}
	}
	sort.Strings(keep)
	var list strings.Builder
	line := 0
	for _, w := range keep {
		if line+len(w) > 100 {
			list.WriteString("\n")
			line = 0
		}
		list.WriteString(w + " ")
		line += len(w) + 1
	}
	out := "// Code generated by TestCalibrate -calibrate -update-upper-pool; DO NOT EDIT.\n\npackage fit\n\n" +
		"// upperWords are words in capitals of more than three letters that cl100k_base\n" +
		"// takes as one token (alone or after a space) and that stand in at least eight\n" +
		"// files of Go, Python, Perl and JavaScript sources and documentation (none in a\n" +
		"// directory a held-out sample is cut from; testdata/wordpool.txt lists them).\n" +
		"const upperWords = `\n" + strings.TrimSpace(list.String()) + "\n`\n"
	if err := os.WriteFile("words_upper.go", []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d words in capitals to words_upper.go", len(keep))
	t.Log(regenerateTables)
}
