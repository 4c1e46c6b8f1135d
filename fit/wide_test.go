package fit

import (
	"bytes"
	"compress/gzip"
	"encoding/base32"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The wide corpus: kinds of text agents read that testdata/corpus does not
// hold, to check the estimate on text it was not fitted to. Samples are cut
// at test time from files installed on a Debian machine with Go, Python and
// PostgreSQL (read, never fetched), taken from testdata/wide (Rust, Java and
// TypeScript, which no system directory holds), or generated here from a
// fixed seed.
//
// Every kind is in one of three splits, and whole kinds are held out:
//
//	fitted  the rates of weightab.go are fitted to them (with the training
//	        samples of testdata/corpus) by TestCalibrate
//	dev     held out of every fit, but watched while the estimator's rules
//	        are chosen: a rule is kept or dropped by what it does on the
//	        fitted and dev kinds, so their numbers are somewhat optimistic
//	final   held out of every fit and of every choice of rules: looked at
//	        only to report, once a set of rules is settled
//
// How the splits were chosen: the dev kinds are the kinds earlier rounds of
// tuning held out and watched while keeping or dropping rules, so they are
// no longer unseen; the last of them (OCaml, Kotlin, Erlang, Dart, Lua,
// Delphi, D, Lisp, Makefiles, Dockerfiles, systemd units, Autoconf's m4,
// LaTeX and an nginx-like configuration) were the final kinds of the round
// before, measured once (all but Erlang's worst sample met the targets) and
// then rotated into dev. The final kinds were picked from what is installed
// on the machine, or generated here, before any of them was measured: kinds
// no other split has (Haxe, Thrift IDL, LLVM TableGen, Python's decimal test
// vectors, manual pages' troff source, SVG, Gradle build scripts, the go
// command's test scripts, the time zone database's source, glibc locale
// definitions, Vim's help, XKB keyboard symbols, Starlark, JSON-lines logs
// and verbose HTTP traces), to be measured first once the rules are settled
// on the fitted and dev kinds (they were: all met the targets but XKB's
// worst sample, 8.08%, and XKB's mean did). While tuning, run with -split=dev, which
// neither prints nor checks the final kinds. When rules change again,
// rotate: the final kinds, once looked at, join dev, and new unseen kinds
// become the final split.
//
// No file a held-out sample is cut from, nor any file of its directory,
// feeds the common-word lists (see wordPoolFiles and TestWordPoolDisjoint).

// wideDev names the kinds held out of the fit and watched while tuning.
var wideDev = map[string]bool{
	"xml": true, "toml": true, "tsv": true, "cpp": true, "java": true, "typescript": true,
	"indented-log": true, "ps-top": true, "uuid": true, "perl": true, "asm": true, "conf": true,
	"rst": true, "vim": true, "proto": true, "php": true, "tcl": true, "ruby": true,
	"csharp": true, "cmake": true, "asm-lib": true,
	"ocaml": true, "kotlin": true, "erlang": true, "dart": true, "lua": true, "delphi": true,
	"dlang": true, "lisp": true, "makefile": true, "dockerfile": true, "systemd": true,
	"m4": true, "latex": true, "nginx-conf": true,
}

// wideFinal names the kinds held out of the fit and of every choice of
// rules.
var wideFinal = map[string]bool{
	"haxe": true, "thrift-idl": true, "tablegen": true, "dectest": true, "man": true, "svg": true,
	"gradle": true, "go-script": true, "tzdata": true, "glibc-locale": true, "vim-help": true,
	"xkb": true, "starlark": true, "jsonl-log": true, "http-trace": true,
}

// wideHeldOut reports whether kind is held out of the fit (dev or final).
func wideHeldOut(kind string) bool { return wideDev[kind] || wideFinal[kind] }

// wideSplitName names the split of kind.
func wideSplitName(kind string) string {
	switch {
	case wideDev[kind]:
		return "dev"
	case wideFinal[kind]:
		return "final"
	}
	return "fitted"
}

// split chooses which kinds TestAccuracyKinds prints and checks: "all", or
// "dev" (the fitted and dev kinds only: the final kinds stay unseen while
// rules are being chosen).
var split = flag.String("split", "all", "kinds TestAccuracyKinds shows: all, or dev (fitted and dev kinds only)")

// wideSampleSize is the size of one sample cut from a bigger file.
const wideSampleSize = 8 << 10

// wideSamples is how many samples a kind has at most.
const wideSamples = 6

// wideFiles are where the kinds cut from installed files come from: glob
// patterns, tried in order until a kind has wideSamples files.
var wideFiles = map[string][]string{
	"xml":     {"/usr/share/xml/iso-codes/*.xml", "/usr/share/metainfo/*.xml", "/usr/share/mime/packages/*.xml"},
	"yaml":    {"/usr/local/go/src/simd/archsimd/_gen/simdgen/ops/*/*.yaml", "/usr/share/doc/python3-yaml/examples/*/*.yaml"},
	"toml":    {"/usr/lib/node_modules/npm/node_modules/*/gyp/pyproject.toml", "/usr/lib/python3/dist-packages/*/pyproject.toml", "/root/.rustup/toolchains/*/lib/rustlib/multirust-channel-manifest.toml"},
	"csv":     {"/usr/share/distro-info/*.csv", "/usr/local/go/src/cmd/go/internal/modfetch/zip_sum_test/testdata/*.csv"},
	"sql":     {"/usr/share/postgresql/*/*.sql"},
	"c":       {"/usr/share/doc/zlib1g-dev/examples/*.c", "/usr/include/*.h", "/usr/include/linux/*.h"},
	"cpp":     {"/usr/include/c++/*/bits/*.tcc", "/usr/include/c++/*/bits/*.h"},
	"shell":   {"/usr/share/doc/git/contrib/*.sh", "/usr/share/doc/git/contrib/*/*.sh", "/usr/share/ucf/*.sh", "/usr/share/postgresql-common/*/*.sh"},
	"js-min":  {"/usr/share/javascript/*/*.min.js"},
	"perl":    {"/usr/share/perl/5.*/*.pm", "/usr/share/perl/5.*/*/*.pm"},
	"asm":     {"/usr/local/go/src/runtime/*.s", "/usr/local/go/src/crypto/internal/fips140/*/*.s"},
	"conf":    {"/usr/share/doc/*/examples/*.conf", "/etc/*.conf", "/usr/share/postgresql/*/*.sample"},
	"css-min": {"/usr/share/doc/libexpat1-dev/expat.html/*.min.css", "/usr/share/doc/python3/_static/*.css", "/usr/share/gitweb/static/*.css", "/usr/share/doc/nodejs/api/assets/*.css"},
	// Final kinds of earlier rounds, now dev.
	"rst":     {"/root/.pyenv/versions/*/lib/python3.*/site-packages/awscli/examples/ec2/*.rst", "/root/.pyenv/versions/*/lib/python3.*/site-packages/awscli/examples/rds/*.rst", "/usr/share/doc/python3-pip/*.rst"},
	"vim":     {"/usr/share/vim/vim*/autoload/*.vim", "/usr/share/vim/vim*/ftplugin/*.vim"},
	"proto":   {"/root/go/pkg/mod/github.com/gogo/protobuf@*/protobuf/google/protobuf/*.proto", "/root/go/pkg/mod/go.temporal.io/server@*/proto/internal/temporal/server/api/*/v1/*.proto"},
	"php":     {"/usr/lib/google-cloud-sdk/platform/google_appengine/php/sdk/google/appengine/runtime/*.php", "/root/go/pkg/mod/github.com/apache/thrift@*/lib/php/test/Unit/Lib/*/*.php"},
	"tcl":     {"/usr/share/tcltk/tk8.*/*.tcl", "/usr/share/tcltk/tcl8.*/*.tcl"},
	"ruby":    {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/rb/spec/*.rb", "/root/go/pkg/mod/github.com/apache/thrift@*/lib/rb/lib/thrift/*/*.rb"},
	"csharp":  {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/netstd/Thrift/*/*.cs", "/root/go/pkg/mod/github.com/apache/thrift@*/lib/netstd/Thrift/*/*/*.cs"},
	"cmake":   {"/usr/lib/llvm-*/lib/cmake/llvm/*.cmake"},
	"asm-lib": {"/usr/local/go/src/internal/*/*.s", "/usr/local/go/src/math/*/*.s"},
	// The final kinds of the round before, now dev.
	"ocaml":      {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/ocaml/src/*.ml", "/root/go/pkg/mod/github.com/apache/thrift@*/test/ocaml/*/*.ml"},
	"kotlin":     {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/kotlin/*/src/*/kotlin/org/apache/thrift/*/*.kt", "/root/go/pkg/mod/github.com/apache/thrift@*/lib/kotlin/src/*/kotlin/org/apache/thrift/*.kt"},
	"erlang":     {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/erl/src/*.erl"},
	"dart":       {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/dart/lib/src/*/*.dart"},
	"lua":        {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/lua/*.lua"},
	"delphi":     {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/delphi/src/*.pas"},
	"dlang":      {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/d/src/thrift/*/*.d"},
	"lisp":       {"/root/go/pkg/mod/github.com/apache/thrift@*/test/cl/*.lisp", "/usr/share/emacs/site-lisp/*/*.el"},
	"makefile":   {"/root/go/pkg/mod/modernc.org/*/Makefile", "/root/go/pkg/mod/github.com/*/*@*/Makefile", "/usr/lib/postgresql/*/lib/pgxs/src/makefiles/*.mk", "/usr/share/dpkg/*.mk"},
	"dockerfile": {"/root/go/pkg/mod/github.com/apache/thrift@*/build/docker/*/Dockerfile", "/root/go/pkg/mod/github.com/apache/thrift@*/docker/*/Dockerfile*", "/root/go/pkg/mod/golang.org/x/sys@*/unix/linux/Dockerfile"},
	"systemd":    {"/usr/lib/systemd/system/systemd-journald.service", "/usr/lib/systemd/system/systemd-logind.service", "/usr/lib/systemd/system/systemd-networkd.service", "/usr/lib/systemd/system/systemd-timesyncd.service", "/usr/lib/systemd/system/getty@.service", "/usr/lib/systemd/system/serial-getty@.service"},
	"m4":         {"/usr/share/aclocal/*.m4"},
	"latex":      {"/root/go/pkg/mod/github.com/apache/thrift@*/doc/specs/*.tex", "/root/go/pkg/mod/gonum.org/v1/gonum@*/graph/community/*.tex", "/usr/lib/google-cloud-sdk/platform/gsutil/third_party/httplib2/*.tex"},
	// The final kinds.
	"haxe":         {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/haxe/src/org/apache/thrift/*/*.hx", "/root/go/pkg/mod/github.com/apache/thrift@*/lib/haxe/src/org/apache/thrift/*.hx"},
	"thrift-idl":   {"/root/go/pkg/mod/github.com/apache/thrift@*/test/*.thrift", "/root/go/pkg/mod/github.com/apache/thrift@*/tutorial/*.thrift"},
	"tablegen":     {"/usr/include/llvm-*/llvm/IR/*.td", "/usr/include/llvm-*/llvm/Target/*.td", "/usr/include/llvm-*/llvm/Target/GlobalISel/*.td"},
	"dectest":      {"/root/.pyenv/versions/3.12.*/lib/python3.12/test/decimaltestdata/*.decTest"},
	"man":          {"/usr/share/man/man1/*.1.gz", "/usr/share/man/man8/*.8.gz"},
	"svg":          {"/usr/share/icons/Adwaita/scalable/*/*.svg", "/root/.rustup/toolchains/stable-*/share/doc/rust/html/book/img/*.svg"},
	"gradle":       {"/root/go/pkg/mod/github.com/apache/thrift@*/lib/java/gradle/*.gradle", "/root/go/pkg/mod/github.com/apache/thrift@*/lib/*/build.gradle*"},
	"go-script":    {"/usr/local/go/src/cmd/go/testdata/script/mod_*.txt", "/usr/local/go/src/cmd/go/testdata/script/test_*.txt", "/usr/local/go/src/cmd/go/testdata/script/build_*.txt", "/usr/local/go/src/cmd/go/testdata/script/cover_*.txt"},
	"tzdata":       {"/usr/share/zoneinfo/tzdata.zi"},
	"glibc-locale": {"/usr/share/i18n/locales/*_*"},
	"vim-help":     {"/usr/share/vim/vim*/doc/*.txt"},
	"xkb":          {"/usr/share/X11/xkb/symbols/*"},
	"starlark":     {"/root/go/pkg/mod/github.com/grpc-ecosystem/grpc-gateway/v2@*/*.bzl", "/root/go/pkg/mod/github.com/grpc-ecosystem/grpc-gateway/v2@*/*/BUILD.bazel", "/root/go/pkg/mod/github.com/grpc-ecosystem/grpc-gateway/v2@*/*/*/BUILD.bazel"},
}

// loadWide builds the wide corpus.
func loadWide(tb testing.TB) []corpusSample {
	tb.Helper()
	var out []corpusSample
	add := func(kind, name, text string) {
		if strings.TrimSpace(text) != "" {
			out = append(out, corpusSample{class: kind, name: name, heldOut: wideHeldOut(kind), text: text})
		}
	}
	for kind, globs := range wideFiles {
		for i, text := range wideCuts(globs) {
			if kind == "css-min" {
				text = minifyCSS(text)
			}
			add(kind, fmt.Sprintf("%02d", i+1), text)
		}
	}
	for _, kind := range []string{"rust", "java", "typescript"} {
		files, _ := filepath.Glob(filepath.Join("testdata/wide", kind, "*.txt"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			add(kind, filepath.Base(f), string(b))
		}
	}
	for kind, gen := range wideGenerators {
		rng := rand.New(rand.NewPCG(7, uint64(len(kind))))
		for i := 0; i < wideSamples; i++ {
			add(kind, fmt.Sprintf("gen-%02d", i+1), gen(rng))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].class < out[j].class || out[i].class == out[j].class && out[i].name < out[j].name
	})
	return out
}

// wideCuts returns up to wideSamples cuts of wideSampleSize from files
// matching globs: from different files, spread over what a glob matches,
// and more than one from a file when there are few.
func wideCuts(globs []string) []string {
	var texts []string
	seen := map[string]bool{}
	for _, g := range globs {
		files, _ := filepath.Glob(g)
		sort.Strings(files)
		step := max(1, len(files)/wideSamples)
		for k := 0; k < len(files) && len(texts) < wideSamples; k += step {
			f, err := filepath.EvalSymlinks(files[k])
			if err != nil || seen[f] {
				continue
			}
			seen[f] = true
			b, err := readWide(f)
			if err != nil || len(b) < 1024 {
				continue
			}
			texts = append(texts, string(b))
		}
	}
	if len(texts) == 0 {
		return nil
	}
	per := (wideSamples + len(texts) - 1) / len(texts)
	var cuts []string
	for _, text := range texts {
		for k := 0; k < per && len(cuts) < wideSamples; k++ {
			off := max(0, len(text)*(k+1)/(per+1)-wideSampleSize/2)
			if k > 0 && off+wideSampleSize > len(text) {
				break
			}
			cuts = append(cuts, cutLines(text, off, wideSampleSize))
		}
	}
	return cuts
}

// readWide reads a file of the wide corpus, uncompressed when its name ends
// in .gz (as manual pages are installed).
func readWide(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return b, err
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer z.Close()
	return io.ReadAll(z)
}

// cutLines returns about size bytes of text from off on, in whole lines.
func cutLines(text string, off, size int) string {
	if off > 0 {
		if i := strings.IndexByte(text[off:], '\n'); i >= 0 {
			off += i + 1
		}
	}
	end := min(len(text), off+size)
	if end < len(text) {
		if i := strings.LastIndexByte(text[off:end], '\n'); i > 0 {
			end = off + i + 1
		}
	}
	return text[off:end]
}

var (
	cssComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	cssSpace   = regexp.MustCompile(`\s*([{}:;,>])\s*`)
	cssBlank   = regexp.MustCompile(`\s+`)
)

// minifyCSS minifies a style sheet as a minifier does: no comments, no
// white space around punctuation, one line.
func minifyCSS(s string) string {
	s = cssComment.ReplaceAllString(s, "")
	s = cssSpace.ReplaceAllString(s, "$1")
	s = cssBlank.ReplaceAllString(s, " ")
	return strings.TrimSpace(strings.ReplaceAll(s, ";}", "}"))
}

// wideGenerators make the kinds no installed file has enough of.
var wideGenerators = map[string]func(*rand.Rand) string{
	"tsv":            genTSV,
	"tsx":            genTSX,
	"markdown-table": genMarkdownTable,
	"stack-trace":    genStackTrace,
	"indented-log":   genIndentedLog,
	"git-log":        genGitLog,
	"ps-top":         genPsTop,
	"base32":         genBase32,
	"uuid":           genUUIDs,
	"cjk-latin":      genCJKLatin,
	"emoji":          genEmoji,
	"nginx-conf":     genNginxConf,
	"jsonl-log":      genJSONLLog,
	"http-trace":     genHTTPTrace,
}

var genWords = strings.Fields(`the a of to and in is for on that with as by it from at be this are or an not
request server client policy token budget file path error value config cache build test deploy user agent
queue worker session network socket timeout retry limit write read open close parse render schedule
invoice customer order payment account region cluster node service handler module package release`)

var genNames = strings.Fields(`alice bob carol dave erin frank grace heidi ivan judy mallory oscar peggy
trent victor walter`)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// sentence is n words of genWords.
func genSentence(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = pick(r, genWords)
	}
	return strings.Join(w, " ")
}

func genIdent(r *rand.Rand) string {
	a, b := pick(r, genWords), pick(r, genWords)
	return a + strings.ToUpper(b[:1]) + b[1:]
}

func genUntil(r *rand.Rand, line func(*rand.Rand, *strings.Builder)) string {
	var b strings.Builder
	for b.Len() < wideSampleSize {
		line(r, &b)
	}
	return b.String()
}

func genTSV(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("id\tname\temail\tregion\tplan\tamount\tcreated_at\n")
	for b.Len() < wideSampleSize {
		n := pick(r, genNames)
		fmt.Fprintf(&b, "%d\t%s %s\t%s.%d@example.com\t%s-%d\t%s\t%d.%02d\t2026-%02d-%02dT%02d:%02d:%02dZ\n",
			r.IntN(1000000), strings.ToUpper(n[:1])+n[1:], pick(r, genWords), n, r.IntN(100), pick(r, []string{"eu", "us", "ap"}),
			r.IntN(9), pick(r, []string{"free", "pro", "team", "enterprise"}), r.IntN(10000), r.IntN(100),
			1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
	}
	return b.String()
}

func genTSX(r *rand.Rand) string {
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		c := genIdent(r)
		c = strings.ToUpper(c[:1]) + c[1:]
		p := genIdent(r)
		fmt.Fprintf(b, "interface %sProps {\n  %s: string;\n  count?: number;\n  onChange: (value: string) => void;\n}\n\n", c, p)
		fmt.Fprintf(b, "export function %s({ %s, count = 0, onChange }: %sProps) {\n", c, p, c)
		fmt.Fprintf(b, "  const [%s, set%s] = useState<string[]>([]);\n", genIdent(r), c)
		fmt.Fprintf(b, "  useEffect(() => {\n    fetch(`/api/%s/${%s}`).then((res) => res.json()).then(onChange);\n  }, [%s]);\n", pick(r, genWords), p, p)
		fmt.Fprintf(b, "  return (\n    <div className=\"%s-%s\">\n      <h2>{%s}</h2>\n", pick(r, genWords), pick(r, genWords), p)
		fmt.Fprintf(b, "      <button type=\"button\" onClick={() => onChange(%q)} disabled={count > %d}>\n        %s\n      </button>\n", pick(r, genWords), r.IntN(100), genSentence(r, 3))
		fmt.Fprintf(b, "      {count > 0 && <span className=\"badge\">{count}</span>}\n    </div>\n  );\n}\n\n")
	})
}

func genMarkdownTable(r *rand.Rand) string {
	var b strings.Builder
	for b.Len() < wideSampleSize {
		fmt.Fprintf(&b, "## %s\n\n| Name | Type | Default | Description |\n|------|------|---------|-------------|\n", genSentence(r, 3))
		for k := 0; k < 12; k++ {
			fmt.Fprintf(&b, "| `%s` | %s | `%d` | %s. |\n", genIdent(r), pick(r, []string{"string", "int", "bool", "duration", "[]string"}), r.IntN(1000), genSentence(r, 6+r.IntN(8)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func genStackTrace(r *rand.Rand) string {
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		switch r.IntN(3) {
		case 0:
			fmt.Fprintf(b, "panic: runtime error: index out of range [%d] with length %d\n\ngoroutine %d [running]:\n", r.IntN(10), r.IntN(10), r.IntN(200))
			for k := 0; k < 8; k++ {
				pkg := pick(r, genWords)
				fmt.Fprintf(b, "github.com/example/%s/internal/%s.(*%s).%s(0xc%09x, {0x%x, 0x%x})\n\t/home/ci/src/%s/internal/%s/%s.go:%d +0x%x\n",
					pick(r, genWords), pkg, title(pick(r, genWords)), title(genIdent(r)), r.IntN(1<<36), r.IntN(1<<24), r.IntN(64), pick(r, genWords), pkg, pick(r, genWords), r.IntN(900), r.IntN(4096))
			}
			b.WriteString("exit status 2\n")
		case 1:
			b.WriteString("Traceback (most recent call last):\n")
			for k := 0; k < 6; k++ {
				fmt.Fprintf(b, "  File \"/usr/lib/python3/dist-packages/%s/%s.py\", line %d, in %s\n    %s = self.%s(%s)\n", pick(r, genWords), pick(r, genWords), r.IntN(2000), pick(r, genWords), pick(r, genWords), genIdent(r), pick(r, genWords))
			}
			fmt.Fprintf(b, "KeyError: '%s'\n\n", pick(r, genWords))
		default:
			fmt.Fprintf(b, "Exception in thread \"main\" java.lang.IllegalStateException: %s\n", genSentence(r, 5))
			for k := 0; k < 10; k++ {
				cls := title(pick(r, genWords)) + title(pick(r, genWords))
				fmt.Fprintf(b, "\tat com.example.%s.%s.%s(%s.java:%d)\n", pick(r, genWords), cls, genIdent(r), cls, r.IntN(900))
			}
			fmt.Fprintf(b, "\t... %d more\n", r.IntN(40))
		}
	})
}

func genIndentedLog(r *rand.Rand) string {
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		depth := 8 * (1 + r.IntN(8))
		fmt.Fprintf(b, "2026-11-%02d %02d:%02d:%02d.%03d %-5s [%s] %s\n", 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000),
			pick(r, []string{"INFO", "WARN", "DEBUG", "ERROR"}), pick(r, genWords), genSentence(r, 4+r.IntN(6)))
		for k := 0; k < 1+r.IntN(4); k++ {
			fmt.Fprintf(b, "%s%s=%q %s=%d\n", strings.Repeat(" ", depth), pick(r, genWords), genSentence(r, 2), pick(r, genWords), r.IntN(100000))
			depth = min(64, depth+8*r.IntN(2))
		}
	})
}

func genGitLog(r *rand.Rand) string {
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		n := pick(r, genNames)
		fmt.Fprintf(b, "commit %016x%016x%08x\nAuthor: %s %s <%s@example.org>\nDate:   %s Nov %d %02d:%02d:%02d 2026 +0%d00\n\n    %s: %s\n\n",
			r.Uint64(), r.Uint64(), r.Uint32(), title(n), title(pick(r, genWords)), n,
			pick(r, []string{"Mon", "Tue", "Wed", "Thu", "Fri"}), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(9),
			pick(r, genWords)+"/"+pick(r, genWords), genSentence(r, 5+r.IntN(6)))
		if r.IntN(2) == 0 {
			fmt.Fprintf(b, "    %s.\n    %s.\n\n", title(genSentence(r, 10)), title(genSentence(r, 8)))
		}
	})
}

func genPsTop(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		fmt.Fprintf(&b, "top - %02d:%02d:%02d up %d days,  %d:%02d,  %d users,  load average: %d.%02d, %d.%02d, %d.%02d\n", r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(90), r.IntN(24), r.IntN(60), r.IntN(9), r.IntN(8), r.IntN(100), r.IntN(8), r.IntN(100), r.IntN(8), r.IntN(100))
		b.WriteString("Tasks: 231 total,   1 running, 230 sleeping,   0 stopped,   0 zombie\n%Cpu(s):  3.1 us,  1.0 sy,  0.0 ni, 95.6 id,  0.2 wa,  0.0 hi,  0.1 si,  0.0 st\n\n")
		b.WriteString("    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND\n")
		for b.Len() < wideSampleSize {
			fmt.Fprintf(&b, "%7d %-8s  20   0 %7d %6d %6d %s %5.1f %5.1f %6d:%02d.%02d %s\n", r.IntN(99999), pick(r, append(genNames, "root")), r.IntN(9999999), r.IntN(999999), r.IntN(99999),
				pick(r, []string{"S", "R", "I"}), r.Float64()*50, r.Float64()*10, r.IntN(500), r.IntN(60), r.IntN(100), pick(r, []string{"postgres", "node", "python3", "kworker/0:1-events", "systemd", "sshd", "containerd"}))
		}
		return b.String()
	}
	b.WriteString("USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n")
	for b.Len() < wideSampleSize {
		fmt.Fprintf(&b, "%-8s %7d %4.1f %4.1f %6d %5d %-8s %-4s %02d:%02d %3d:%02d %s\n", pick(r, append(genNames, "root")), r.IntN(99999), r.Float64()*20, r.Float64()*5, r.IntN(999999), r.IntN(99999),
			pick(r, []string{"?", "pts/0", "pts/1"}), pick(r, []string{"Ss", "S", "Sl", "R+", "I<"}), r.IntN(24), r.IntN(60), r.IntN(100), r.IntN(60),
			pick(r, []string{"/usr/sbin/sshd -D", "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main", "node /srv/app/server.js --port 8080", "[kworker/u8:2-events_unbound]", "/usr/bin/python3 -m http.server"}))
	}
	return b.String()
}

func genBase32(r *rand.Rand) string {
	raw := make([]byte, wideSampleSize*5/8)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	s := base32.StdEncoding.EncodeToString(raw)
	if r.IntN(2) == 0 {
		s = strings.ToLower(strings.TrimRight(s, "="))
	}
	var b strings.Builder
	for len(s) > 0 {
		n := min(len(s), 64)
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	return b.String()
}

func genUUIDs(r *rand.Rand) string {
	upper := r.IntN(3) == 0
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		u := fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Uint64()&(1<<48-1))
		if upper {
			u = strings.ToUpper(u)
		}
		switch r.IntN(3) {
		case 0:
			b.WriteString(u + "\n")
		case 1:
			fmt.Fprintf(b, "%s  %s\n", u, pick(r, genWords))
		default:
			fmt.Fprintf(b, "  %q,\n", u)
		}
	})
}

// cjkSources hold CJK text with some Latin: Vim's tutors.
var cjkSources = []string{"/usr/share/vim/vim*/tutor/tutor.ja.utf-8", "/usr/share/vim/vim*/tutor/tutor.zh_cn.utf-8", "/usr/share/vim/vim*/tutor/tutor.ko.utf-8", "/usr/share/vim/vim*/tutor/tutor.zh_tw.utf-8"}

// genCJKLatin interleaves lines of CJK text installed on the machine (Vim's
// tutors) with English log lines and identifiers.
func genCJKLatin(r *rand.Rand) string {
	var cjk []string
	for _, g := range cjkSources {
		files, _ := filepath.Glob(g)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if len(l) > 20 && strings.ContainsFunc(l, func(c rune) bool { return c >= cjkLo && c < cjkHi }) {
					cjk = append(cjk, strings.TrimSpace(l))
				}
			}
		}
	}
	if len(cjk) == 0 {
		return ""
	}
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		switch r.IntN(3) {
		case 0:
			fmt.Fprintf(b, "%s [%s] %s (%s=%d)\n", pick(r, []string{"INFO", "WARN", "ERROR"}), genIdent(r), pick(r, cjk), pick(r, genWords), r.IntN(1000))
		case 1:
			fmt.Fprintf(b, "- `%s.%s`: %s\n", pick(r, genWords), pick(r, []string{"yaml", "json", "go"}), pick(r, cjk))
		default:
			fmt.Fprintf(b, "%s %s\n", pick(r, cjk), genSentence(r, 4))
		}
	})
}

var emojis = []string{"😀", "🚀", "✅", "❌", "⚠️", "🔥", "🎉", "👍", "👎", "🐛", "📦", "🔒", "✨", "💡", "📝", "👩‍💻", "🇩🇪", "❤️", "🙏", "⏱️", "🧪", "🔧"}

func genEmoji(r *rand.Rand) string {
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		switch r.IntN(3) {
		case 0:
			fmt.Fprintf(b, "%s %s: %s %s\n", pick(r, emojis), pick(r, genWords), genSentence(r, 5+r.IntN(5)), pick(r, emojis))
		case 1:
			fmt.Fprintf(b, "- [%s] %s %s%s\n", pick(r, []string{"x", " "}), title(genSentence(r, 4)), pick(r, emojis), pick(r, emojis))
		default:
			fmt.Fprintf(b, "%s%s%s great work @%s! %s\n", pick(r, emojis), pick(r, emojis), pick(r, emojis), pick(r, genNames), genSentence(r, 3))
		}
	})
}

// genNginxConf writes an nginx-like configuration: nested blocks of
// directives with paths, addresses, sizes and regular expressions.
func genNginxConf(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("user www-data;\nworker_processes auto;\npid /run/nginx.pid;\n\nevents {\n    worker_connections 1024;\n}\n\nhttp {\n")
	b.WriteString("    include /etc/nginx/mime.types;\n    default_type application/octet-stream;\n    sendfile on;\n    keepalive_timeout 65;\n\n")
	for b.Len() < wideSampleSize {
		name := pick(r, genWords)
		fmt.Fprintf(&b, "    upstream %s_backend {\n", name)
		for k := 0; k < 1+r.IntN(3); k++ {
			fmt.Fprintf(&b, "        server 10.%d.%d.%d:%d weight=%d max_fails=%d;\n", r.IntN(256), r.IntN(256), r.IntN(256), 8000+r.IntN(1000), 1+r.IntN(5), 1+r.IntN(3))
		}
		b.WriteString("    }\n\n    server {\n")
		fmt.Fprintf(&b, "        listen %d ssl http2;\n        server_name %s.example.com www.%s.example.com;\n", pick(r, []int{443, 8443}), name, name)
		fmt.Fprintf(&b, "        ssl_certificate /etc/ssl/certs/%s.pem;\n        ssl_certificate_key /etc/ssl/private/%s.key;\n", name, name)
		fmt.Fprintf(&b, "        access_log /var/log/nginx/%s.access.log combined;\n        client_max_body_size %dm;\n\n", name, 1+r.IntN(100))
		for k := 0; k < 2+r.IntN(3); k++ {
			switch r.IntN(3) {
			case 0:
				fmt.Fprintf(&b, "        location /%s/ {\n            proxy_pass http://%s_backend;\n            proxy_set_header Host $host;\n            proxy_set_header X-Real-IP $remote_addr;\n            proxy_read_timeout %ds;\n        }\n\n", pick(r, genWords), name, 10+r.IntN(120))
			case 1:
				fmt.Fprintf(&b, "        location ~* \\.(%s|%s)$ {\n            root /srv/%s/static;\n            expires %dd;\n            add_header Cache-Control \"public, max-age=%d\";\n        }\n\n", pick(r, []string{"css", "js", "png"}), pick(r, []string{"svg", "woff2", "ico"}), name, 1+r.IntN(30), 3600*(1+r.IntN(48)))
			default:
				fmt.Fprintf(&b, "        # %s\n        location = /%s {\n            return 301 https://$host/%s/$request_uri;\n        }\n\n", genSentence(r, 5+r.IntN(5)), pick(r, genWords), pick(r, genWords))
			}
		}
		b.WriteString("    }\n\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// genJSONLLog writes structured logs, one JSON object a line, as services
// and log shippers write them.
func genJSONLLog(r *rand.Rand) string {
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		fmt.Fprintf(b, `{"ts":"2026-11-%02dT%02d:%02d:%02d.%06dZ","level":%q,"logger":"%s.%s","msg":%q,"trace_id":"%016x%016x","span_id":"%016x"`,
			1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000000), pick(r, []string{"info", "warn", "debug", "error"}),
			pick(r, genWords), pick(r, genWords), genSentence(r, 3+r.IntN(6)), r.Uint64(), r.Uint64(), r.Uint64())
		switch r.IntN(3) {
		case 0:
			fmt.Fprintf(b, `,"http":{"method":%q,"path":"/api/v%d/%s/%d","status":%d,"duration_ms":%.3f,"bytes":%d}`,
				pick(r, []string{"GET", "POST", "PUT", "DELETE"}), 1+r.IntN(3), pick(r, genWords), r.IntN(100000),
				pick(r, []int{200, 201, 204, 301, 400, 403, 404, 500, 503}), r.Float64()*900, r.IntN(1<<20))
		case 1:
			fmt.Fprintf(b, `,"user":{"id":%d,"name":%q},"region":"%s-%d","retry":%d`, r.IntN(1000000), pick(r, genNames), pick(r, []string{"eu", "us", "ap"}), r.IntN(9), r.IntN(5))
		default:
			fmt.Fprintf(b, `,"error":%q,"caller":"%s/%s.go:%d"`, genSentence(r, 4)+": "+genSentence(r, 3), pick(r, genWords), pick(r, genWords), r.IntN(900))
		}
		b.WriteString("}\n")
	})
}

// genHTTPTrace writes what curl -v prints: the connection, the request and
// response headers, and a short body.
func genHTTPTrace(r *rand.Rand) string {
	return genUntil(r, func(r *rand.Rand, b *strings.Builder) {
		host := pick(r, genWords) + ".example.com"
		fmt.Fprintf(b, "*   Trying 203.0.%d.%d:443...\n* Connected to %s (203.0.%d.%d) port 443 (#0)\n", r.IntN(256), r.IntN(256), host, r.IntN(256), r.IntN(256))
		b.WriteString("* ALPN: offers h2,http/1.1\n* TLSv1.3 (OUT), TLS handshake, Client hello (1):\n* TLSv1.3 (IN), TLS handshake, Server hello (2):\n")
		fmt.Fprintf(b, "* SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384\n* Server certificate:\n*  subject: CN=%s\n*  expire date: Mar %2d %02d:%02d:%02d 2027 GMT\n", host, 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
		path := fmt.Sprintf("/v%d/%s/%s?limit=%d&cursor=%x", 1+r.IntN(2), pick(r, genWords), pick(r, genWords), 10*(1+r.IntN(10)), r.Uint64())
		fmt.Fprintf(b, "> %s %s HTTP/1.1\n> Host: %s\n> User-Agent: curl/8.%d.%d\n> Accept: */*\n> Authorization: Bearer %x%x\n>\n",
			pick(r, []string{"GET", "POST", "DELETE"}), path, host, r.IntN(12), r.IntN(3), r.Uint64(), r.Uint64())
		fmt.Fprintf(b, "< HTTP/1.1 %s\n< Date: %s, %02d Nov 2026 %02d:%02d:%02d GMT\n< Content-Type: application/json; charset=utf-8\n< Content-Length: %d\n",
			pick(r, []string{"200 OK", "201 Created", "404 Not Found", "429 Too Many Requests", "502 Bad Gateway"}), pick(r, []string{"Mon", "Tue", "Wed", "Thu", "Fri"}),
			1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(9000))
		fmt.Fprintf(b, "< X-Request-Id: %08x-%04x-%04x-%04x-%012x\n< Cache-Control: no-store, max-age=0\n< X-RateLimit-Remaining: %d\n<\n",
			r.Uint32(), r.IntN(1<<16), r.IntN(1<<16), r.IntN(1<<16), r.Uint64()&(1<<48-1), r.IntN(5000))
		fmt.Fprintf(b, `{"items":[{"id":"%s_%x","%s":%q,"count":%d}],"next":"%x"}`+"\n* Connection #0 to host %s left intact\n\n",
			pick(r, genWords), r.Uint32(), pick(r, genWords), genSentence(r, 4), r.IntN(1000), r.Uint64(), host)
	})
}

// Targets on every held-out kind of the wide corpus: mean and worst
// absolute error against cl100k_base.
const (
	heldOutMeanTarget  = 0.03
	heldOutWorstTarget = 0.08
)

// heldOutMisses are the held-out kinds the estimate does not yet bring
// within the targets, with the mean and worst error it must not exceed
// (what it measures now, with a little room): the test fails when one gets
// worse, and when any other held-out kind misses the targets. These are
// final kinds, measured once after the rules were settled on the fitted and
// dev kinds; no rule was tuned to them (to tune to them, rotate them into
// dev first).
var heldOutMisses = map[string][2]float64{
	"xkb": {heldOutMeanTarget, 0.09},
}

// TestAccuracyKinds prints, for every kind of the wide corpus, the samples,
// the mean and the worst absolute error of Count against cl100k_base, and
// the kind's split; it fails when a held-out kind (dev or final) misses the
// targets. With -split=dev it leaves the final kinds out (see the splits
// above).
func TestAccuracyKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("the exact tokenizer takes a few seconds over the corpus")
	}
	if *split != "all" && *split != "dev" {
		t.Fatalf("-split=%q: want all or dev", *split)
	}
	shown := func(kind string) bool { return *split == "all" || !wideFinal[kind] }
	wide := loadWide(t)
	kinds := map[string]*classErr{}
	var order []string
	heldKinds := 0
	for _, s := range wide {
		if !shown(s.class) {
			continue
		}
		exact := exactCount(t, s.text)
		est := Count(s.text)
		e := math.Abs(float64(est-exact)) / float64(max(exact, 1))
		if kinds[s.class] == nil {
			kinds[s.class] = &classErr{}
			order = append(order, s.class)
			if s.heldOut {
				heldKinds++
			}
		}
		kinds[s.class].add(s.name, e)
		if testing.Verbose() && e > 0.03 {
			t.Logf("%s/%s: count %d, exact %d (%+.1f%%)", s.class, s.name, est, exact, 100*float64(est-exact)/float64(exact))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-16s %7s %9s %9s  %s\n", "kind", "samples", "mean", "worst", "split")
	splits := map[string]*classErr{}
	for _, k := range order {
		c := kinds[k]
		name := wideSplitName(k)
		mark := name
		if _, ok := heldOutMisses[k]; ok {
			mark += ", misses the targets"
		}
		if splits[name] == nil {
			splits[name] = &classErr{}
		}
		sp := splits[name]
		sp.sum, sp.n = sp.sum+c.sum, sp.n+c.n
		if c.worst > sp.worst {
			sp.worst, sp.worstOne = c.worst, k+"/"+c.worstOne
		}
		fmt.Fprintf(&b, "%-16s %7d %8.2f%% %8.2f%%  %s\n", k, c.n, 100*c.mean(), 100*c.worst, mark)
	}
	for _, name := range []string{"fitted", "dev", "final"} {
		if sp := splits[name]; sp != nil {
			fmt.Fprintf(&b, "%s kinds: mean %.2f%% over %d samples, worst %.2f%% (%s)\n", name, 100*sp.mean(), sp.n, 100*sp.worst, sp.worstOne)
		}
	}
	t.Log(b.String())
	if want := 8; *split == "all" && heldKinds < want {
		t.Errorf("only %d held-out kinds could be built on this machine, want at least %d", heldKinds, want)
	}
	for _, k := range order {
		c := kinds[k]
		if !wideHeldOut(k) {
			continue
		}
		mean, worst := heldOutMeanTarget, heldOutWorstTarget
		if miss, ok := heldOutMisses[k]; ok {
			mean, worst = miss[0], miss[1]
		}
		if c.mean() > mean {
			t.Errorf("held-out kind %s: mean absolute error %.2f%%, want at most %.1f%%", k, 100*c.mean(), 100*mean)
		}
		if c.worst > worst {
			t.Errorf("held-out kind %s: worst absolute error %.2f%% (%s), want at most %.1f%%", k, 100*c.worst, c.worstOne, 100*worst)
		}
	}
}

// title capitalizes the first letter of each word of ASCII text.
func title(s string) string {
	b := []byte(s)
	for i := range b {
		if (i == 0 || b[i-1] == ' ') && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}
