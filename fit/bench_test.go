package fit

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// corpusText is the whole corpus as one text, for throughput.
func corpusText(b *testing.B) string {
	b.Helper()
	var sb strings.Builder
	for _, s := range loadCorpus(b) {
		sb.WriteString(s.text)
	}
	return sb.String()
}

// BenchmarkWeigh measures the estimate's throughput over the corpus;
// compare it with BenchmarkExactTokenizer in the same run.
func BenchmarkWeigh(b *testing.B) {
	text := corpusText(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		Weigh(text)
	}
}

// BenchmarkCount times Count alone over the samples BenchmarkCountVsExact
// uses (the corpus and the wide corpus, one call a sample): the one to
// profile,
//
//	go test ./fit -run '^$' -bench 'Count$' -cpuprofile cpu.out
func BenchmarkCount(b *testing.B) {
	samples := append(loadCorpus(b), loadWide(b)...)
	size := 0
	for _, s := range samples {
		size += len(s.text)
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		for _, s := range samples {
			Count(s.text)
		}
	}
}

// BenchmarkExactTokenizer is the baseline: cl100k_base's byte-pair
// encoding over the same corpus.
func BenchmarkExactTokenizer(b *testing.B) {
	text := corpusText(b)
	c := exactCodec(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Count(text); err != nil {
			b.Fatal(err)
		}
	}
}

// hugeMarkdown builds a Markdown document of at least size bytes: chapters,
// sections and subsections of generated prose, lists and code blocks.
func hugeMarkdown(size int) string {
	words := strings.Fields(`the kernel decides every call against a declared policy and runs it confined
	by the operating system while the model reads only what fits its budget of tokens so that a long answer
	becomes a stub with an outline made without any model from headings keys paths and hunks of diffs`)
	var b strings.Builder
	b.Grow(size + 4096)
	rng := uint64(42)
	next := func(n int) int {
		rng = rng*6364136223846793005 + 1442695040888963407
		return int((rng >> 33) % uint64(n))
	}
	sentence := func() {
		k := 6 + next(14)
		for i := 0; i < k; i++ {
			w := words[next(len(words))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if i < k-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(". ")
	}
	b.WriteString("# Operations handbook\n\nThis handbook is generated for the benchmark.\n\n")
	// About 150 chapters whatever the size, each of 12 sections or more.
	chapter := max(size/150, 4096)
	for ch := 1; b.Len() < size; ch++ {
		fmt.Fprintf(&b, "## Chapter %d: %s\n\n", ch, words[next(len(words))])
		end := min(size, b.Len()+chapter)
		for sec := 1; (sec <= 12 || b.Len() < end) && b.Len() < size; sec++ {
			fmt.Fprintf(&b, "### Section %d.%d\n\n", ch, sec)
			for para := 0; para < 4; para++ {
				for k := 0; k < 5; k++ {
					sentence()
				}
				b.WriteString("\n\n")
			}
			if sec%3 == 0 {
				b.WriteString("```go\nfunc handle(w http.ResponseWriter, r *http.Request) {\n\tfmt.Fprintf(w, \"%d\", 42)\n}\n```\n\n")
			}
			if sec%4 == 0 {
				b.WriteString("- first item of the list\n- second item with `code`\n- third [link](https://example.com/a/b)\n\n")
			}
		}
	}
	return b.String()
}

// BenchmarkFitHugeSummary fits a 31 MiB Markdown document to an 8,000-token
// summary (the target is under 200 ms on the reference machine).
func BenchmarkFitHugeSummary(b *testing.B) {
	doc := hugeMarkdown(31 << 20)
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	var res Result
	cpu0 := cpuTime()
	for b.Loop() {
		res = Fit(doc, Request{View: Summary, Budget: 8000})
	}
	b.StopTimer()
	// CPU time as well as wall time: on a shared machine the wall time
	// measures the neighbours too.
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	if res.Note.Tokens > 8000 || res.Note.View != Summary {
		b.Fatalf("got view %s with %d tokens, want a summary of at most 8000", res.Note.View, res.Note.Tokens)
	}
}

// BenchmarkReadBaseline is the floor any fitting of the same 31 MiB
// document pays: one pass that hashes every byte. On a loaded machine the
// ratio of BenchmarkFitHugeSummary to it says more than either time.
func BenchmarkReadBaseline(b *testing.B) {
	doc := hugeMarkdown(31 << 20)
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	var h uint64
	for b.Loop() {
		h = hashSeed
		for i := 0; i < len(doc); i++ {
			h = (h ^ uint64(doc[i])) * hashMul
		}
	}
	if h == 0 {
		b.Log(h)
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
