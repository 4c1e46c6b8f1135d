// Command corpusgen writes the token-estimate corpus of package fit
// (testdata/corpus): samples of every class of text a tool answers with,
// some cut from permissively licensed text on a Debian machine with Go,
// Python, Node, Rust and Vim installed (BSD, MIT, Apache, PSF, Vim and zlib
// licences; licence texts verbatim; sources.txt names the origin of each
// sample), the rest generated from a fixed seed. Run it from the repository
// root:
//
//	go run ./fit/testdata/corpusgen
//
// The corpus is shipped; this program documents how it was made and makes it
// again on a similar machine. It rewrites only the class directories and
// sources.txt.
package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const out = "fit/testdata/corpus"

// chunkSize is the size of one sample cut from a bigger file.
const chunkSize = 16 << 10

type sample struct {
	class, name, source, text string
}

var samples []sample

func add(class, name, source, text string) {
	if strings.TrimSpace(text) == "" {
		fmt.Fprintf(os.Stderr, "corpusgen: %s/%s: empty (source %s), skipped\n", class, name, source)
		return
	}
	samples = append(samples, sample{class, name, source, text})
}

// cut returns about size bytes of text from off on, in whole lines.
func cut(text string, off, size int) string {
	if off > 0 {
		if off >= len(text) {
			return ""
		}
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

func read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corpusgen: %v\n", err)
		return ""
	}
	return string(b)
}

func fileChunk(class, name, path string, off int) {
	add(class, name, path, cut(read(path), off, chunkSize))
}

func run(args ...string) string {
	b, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil && len(b) == 0 {
		fmt.Fprintf(os.Stderr, "corpusgen: %v: %v\n", args, err)
	}
	return string(b)
}

var tags = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)
var blank = regexp.MustCompile(`\n\s*\n\s*\n+`)

// htmlText is the readable text of an HTML page.
func htmlText(h string) string {
	t := tags.ReplaceAllString(h, "")
	r := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&quot;", `"`, "&#39;", "'", "&nbsp;", " ")
	return blank.ReplaceAllString(r.Replace(t), "\n\n")
}

func main() {
	rng := rand.New(rand.NewPCG(2026, 11))
	realText()
	synthetic(rng)
	sort.Slice(samples, func(i, j int) bool {
		return samples[i].class+samples[i].name < samples[j].class+samples[j].name
	})
	classes := map[string]bool{}
	for _, s := range samples {
		classes[s.class] = true
	}
	for c := range classes {
		if err := os.RemoveAll(filepath.Join(out, c)); err != nil {
			panic(err)
		}
	}
	var src strings.Builder
	src.WriteString("# Where each sample of the corpus came from (written by corpusgen)\n")
	for _, s := range samples {
		p := filepath.Join(out, s.class, s.name+".txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(p, []byte(s.text), 0o644); err != nil {
			panic(err)
		}
		fmt.Fprintf(&src, "%s/%s.txt\t%s\n", s.class, s.name, s.source)
	}
	if err := os.WriteFile(filepath.Join(out, "sources.txt"), []byte(src.String()), 0o644); err != nil {
		panic(err)
	}
	fmt.Fprintf(os.Stderr, "corpusgen: %d samples\n", len(samples))
}

// realText cuts samples from text installed on the machine.
func realText() {
	const rust = "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html"
	// Prose.
	fileChunk("prose", "01-vim-tutor", "/usr/share/vim/vim90/tutor/tutor", 0)
	fileChunk("prose", "02-apache-license", "/usr/share/common-licenses/Apache-2.0", 0)
	fileChunk("prose", "03-gpl3", "/usr/share/common-licenses/GPL-3", 8000)
	add("prose", "04-go-memory-model", "/usr/local/go/doc/go_mem.html (text)", cut(htmlText(read("/usr/local/go/doc/go_mem.html")), 2000, chunkSize))
	add("prose", "05-go-spec", "/usr/local/go/doc/go_spec.html (text)", cut(htmlText(read("/usr/local/go/doc/go_spec.html")), 30000, chunkSize))
	add("prose", "06-rust-book-ownership", rust+"/book/ch04-01-what-is-ownership.html (text)", cut(htmlText(read(rust+"/book/ch04-01-what-is-ownership.html")), 4000, chunkSize))
	add("prose", "08-zlib-how", "/usr/share/doc/zlib1g-dev/examples/zlib_how.html (text)", cut(htmlText(read("/usr/share/doc/zlib1g-dev/examples/zlib_how.html")), 0, chunkSize))
	add("prose", "09-rust-book-errors", rust+"/book/ch09-02-recoverable-errors-with-result.html (text)", cut(htmlText(read(rust+"/book/ch09-02-recoverable-errors-with-result.html")), 4000, chunkSize))

	// Go.
	for i, f := range []string{"net/http/server.go", "strings/strings.go", "sort/sort.go", "encoding/json/decode.go",
		"fmt/print.go", "bufio/bufio.go", "text/template/exec.go", "net/url/url.go", "os/exec/exec.go"} {
		fileChunk("go", fmt.Sprintf("%02d-%s", i+1, strings.ReplaceAll(strings.TrimSuffix(f, ".go"), "/", "-")), "/usr/local/go/src/"+f, 3000)
	}
	// Python.
	for i, f := range []string{"argparse.py", "subprocess.py", "json/decoder.py", "textwrap.py", "shutil.py",
		"logging/__init__.py", "http/client.py", "dataclasses.py", "pathlib.py"} {
		fileChunk("python", fmt.Sprintf("%02d-%s", i+1, strings.ReplaceAll(strings.TrimSuffix(f, ".py"), "/", "-")), "/usr/lib/python3.11/"+f, 2000)
	}
	// JavaScript.
	js := []string{"/usr/share/javascript/jquery/jquery.js", "/usr/share/javascript/underscore/underscore.js",
		"/usr/local/go/lib/wasm/wasm_exec.js", "/usr/share/javascript/sphinxdoc/1.0/searchtools.js",
		"/usr/share/javascript/sphinxdoc/1.0/doctools.js"}
	js = append(js, glob(rust+"/static.files/main-*.js")...)
	js = append(js, glob(rust+"/static.files/search-*.js")...)
	js = append(js, glob(rust+"/book/book-*.js")...)
	for i, f := range js {
		fileChunk("js", fmt.Sprintf("%02d-%s", i+1, strings.SplitN(filepath.Base(f), ".", 2)[0]), f, 1000)
	}
	fileChunk("js", "09-jquery-2", "/usr/share/javascript/jquery/jquery.js", 120000)

	// Markdown.
	for i, f := range []string{"/usr/share/doc/nodejs/api/child_process.md", "/usr/share/doc/nodejs/api/url.md",
		"/usr/share/doc/nodejs/api/test.md", "/usr/local/go/doc/godebug.md", "/usr/share/doc/nodejs/BUILDING.md",
		"/usr/share/doc/nodejs/api/fs.md", "/usr/share/doc/nodejs/SECURITY.md", "/usr/share/doc/nodejs/api/http.md",
		"/usr/share/doc/nodejs/changelogs/CHANGELOG_V12.md"} {
		fileChunk("markdown", fmt.Sprintf("%02d-%s", i+1, strings.TrimSuffix(filepath.Base(f), ".md")), f, 0)
	}
	// HTML.
	fileChunk("html", "01-go-spec", "/usr/local/go/doc/go_spec.html", 50000)
	fileChunk("html", "02-go-mem", "/usr/local/go/doc/go_mem.html", 0)
	fileChunk("html", "03-go-asm", "/usr/local/go/doc/asm.html", 0)
	fileChunk("html", "04-rust-book-structs", rust+"/book/ch05-01-defining-structs.html", 0)
	fileChunk("html", "05-zlib-how", "/usr/share/doc/zlib1g-dev/examples/zlib_how.html", 0)
	fileChunk("html", "06-libxslt-templates", "/usr/share/doc/libxslt1-dev/html/html/libxslt-templates.html", 0)
	fileChunk("html", "07-rust-book-intro", rust+"/book/ch00-00-introduction.html", 0)
	fileChunk("html", "08-libffi-index", "/usr/share/doc/libffi8/html/Index.html", 0)
	fileChunk("html", "09-rust-book-closures", rust+"/book/ch13-01-closures.html", 0)

	// Logs.
	fileChunk("logs", "01-dpkg", "/var/log/dpkg.log", 0)
	fileChunk("logs", "02-apt-history", "/var/log/apt/history.log", 0)
	fileChunk("logs", "03-alternatives", "/var/log/alternatives.log", 0)
	fileChunk("logs", "04-apt-term", "/var/log/apt/term.log", 0)

	// File listings.
	add("ls", "01-usr-bin", "ls -l /usr/bin", cut(run("ls", "-l", "/usr/bin"), 0, chunkSize))
	add("ls", "02-etc", "ls -la /etc", cut(run("ls", "-la", "/etc"), 0, chunkSize))
	add("ls", "03-usr-lib", "ls -l /usr/lib/x86_64-linux-gnu", cut(run("ls", "-l", "/usr/lib/x86_64-linux-gnu"), 0, chunkSize))
	add("ls", "04-go-net-http-R", "ls -lR /usr/local/go/src/net/http", cut(run("ls", "-lR", "/usr/local/go/src/net/http"), 0, chunkSize))
	add("ls", "05-doc-iso", "ls -l --time-style=long-iso /usr/share/doc", cut(run("ls", "-l", "--time-style=long-iso", "/usr/share/doc"), 0, chunkSize))
	add("ls", "06-find-encoding", "find /usr/local/go/src/encoding", cut(run("find", "/usr/local/go/src/encoding"), 0, chunkSize))
	add("ls", "07-find-python", "find /usr/lib/python3.11 -name '*.py'", cut(run("find", "/usr/lib/python3.11", "-name", "*.py"), 0, chunkSize))
	add("ls", "08-usr-share-lh", "ls -lh /usr/share", cut(run("ls", "-lh", "/usr/share"), 0, chunkSize))
	add("ls", "09-go-src-las", "ls -las /usr/local/go/src/runtime", cut(run("ls", "-las", "/usr/local/go/src/runtime"), 0, chunkSize))

	// Diffs.
	xt := run("diff", "-ru", "/usr/local/go/src/vendor/golang.org/x/text", "/root/go/pkg/mod/golang.org/x/text@v0.44.0")
	add("diff", "01-x-text-a", "diff -ru vendored and module x/text", cut(xt, 0, chunkSize))
	add("diff", "02-x-text-b", "diff -ru vendored and module x/text", cut(xt, 100000, chunkSize))
	add("diff", "03-x-text-c", "diff -ru vendored and module x/text", cut(xt, 250000, chunkSize))
	add("diff", "04-x-sys-cpu", "diff -ru vendored and module x/sys/cpu", cut(run("diff", "-ru", "/usr/local/go/src/vendor/golang.org/x/sys/cpu", "/root/go/pkg/mod/golang.org/x/sys@v0.50.0/cpu"), 0, chunkSize))
	add("diff", "05-x-net", "diff -ru vendored and module x/net/http and dns",
		run("diff", "-ru", "/usr/local/go/src/vendor/golang.org/x/net/http", "/root/go/pkg/mod/golang.org/x/net@v0.62.0/http")+
			run("diff", "-ru", "/usr/local/go/src/vendor/golang.org/x/net/dns", "/root/go/pkg/mod/golang.org/x/net@v0.62.0/dns"))
	// The first commits of this repository, which no longer change.
	gl := run("git", "-C", ".", "log", "-p", "--reverse", "--max-count=40", "d89a667", "--", "errs", "internal/cli/cli.go", "netrule", "audit")
	add("diff", "06-git-log-a", "git log -p of this repository", cut(gl, 0, chunkSize))
	add("diff", "07-git-log-b", "git log -p of this repository", cut(gl, 60000, chunkSize))
	add("diff", "08-x-text-d", "diff -ru vendored and module x/text", cut(xt, 180000, chunkSize))
	add("diff", "09-git-log-c", "git log -p of this repository", cut(gl, 30000, chunkSize))

	// CJK.
	for i, f := range []string{"tutor.zh_cn.utf-8", "tutor.zh_tw.utf-8", "tutor.ja.utf-8", "tutor.ko.utf-8"} {
		p := "/usr/share/vim/vim90/tutor/" + f
		lang := strings.Split(f, ".")[1]
		add("cjk", fmt.Sprintf("%02d-%s-a", 2*i+1, lang), p, cut(read(p), 0, chunkSize))
		add("cjk", fmt.Sprintf("%02d-%s-b", 2*i+2, lang), p, cut(read(p), 20000, chunkSize))
	}
}

func glob(p string) []string {
	m, _ := filepath.Glob(p)
	sort.Strings(m)
	return m
}

// synthetic generates the classes that are made rather than found: JSON,
// logs, base64 and hex.
func synthetic(rng *rand.Rand) {
	words := strings.Fields(`alpha build cache daemon error field group handler index job kernel limit mode node
	open policy queue request server token user value worker zone deploy review merge branch commit release
	timeout retry backoff socket upstream payload schema tenant region cluster quota metric label session`)
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	sentence := func(n int) string {
		var b []string
		for range n {
			b = append(b, pick(words))
		}
		s := strings.Join(b, " ")
		return strings.ToUpper(s[:1]) + s[1:] + "."
	}
	hexs := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return hex.EncodeToString(b)
	}
	// JSON: records of an issue tracker, a package lock, metrics, the dpkg
	// database.
	issues := func(n int) any {
		var xs []map[string]any
		for i := range n {
			xs = append(xs, map[string]any{
				"id": 1000 + i, "number": 40 + i, "title": sentence(4 + rng.IntN(6)),
				"state": pick([]string{"open", "closed"}), "locked": rng.IntN(5) == 0,
				"user":   map[string]any{"login": pick(words) + pick(words), "id": rng.IntN(900000), "site_admin": false},
				"labels": []string{pick(words), pick(words)}, "comments": rng.IntN(30),
				"created_at": fmt.Sprintf("2025-%02d-%02dT%02d:%02d:%02dZ", 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60)),
				"body":       sentence(10+rng.IntN(20)) + " " + sentence(8),
				"url":        fmt.Sprintf("https://api.example.com/repos/acme/%s/issues/%d", pick(words), 40+i),
			})
		}
		return xs
	}
	lock := func(n int) any {
		pk := map[string]any{}
		for range n {
			name := pick(words) + "-" + pick(words)
			pk["node_modules/"+name] = map[string]any{
				"version":   fmt.Sprintf("%d.%d.%d", rng.IntN(9), rng.IntN(30), rng.IntN(20)),
				"resolved":  fmt.Sprintf("https://registry.npmjs.org/%s/-/%s-1.%d.0.tgz", name, name, rng.IntN(9)),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString([]byte(hexs(32)))[:86] + "==",
				"dev":       rng.IntN(2) == 0, "license": pick([]string{"MIT", "ISC", "Apache-2.0", "BSD-3-Clause"}),
			}
		}
		return map[string]any{"name": "acme-web", "version": "3.2.1", "lockfileVersion": 3, "requires": true, "packages": pk}
	}
	metrics := func(n int) any {
		var pts []map[string]any
		for i := range n {
			pts = append(pts, map[string]any{"ts": 1767225600 + 15*i, "cpu": float64(rng.IntN(10000)) / 100,
				"mem_bytes": rng.Int64N(8 << 30), "rps": rng.IntN(5000), "p99_ms": float64(rng.IntN(100000)) / 1000,
				"host": fmt.Sprintf("node-%02d.%s.internal", rng.IntN(40), pick(words))})
		}
		return map[string]any{"series": "web", "interval": "15s", "points": pts}
	}
	dpkg := func(off, n int) any {
		var xs []map[string]string
		for _, para := range strings.Split(read("/var/lib/dpkg/status"), "\n\n")[off:] {
			m := map[string]string{}
			key := ""
			for _, l := range strings.Split(para, "\n") {
				if strings.HasPrefix(l, " ") && key != "" {
					m[key] += "\n" + strings.TrimSpace(l)
				} else if k, v, ok := strings.Cut(l, ": "); ok {
					key, m[k] = k, v
				}
			}
			xs = append(xs, m)
			if len(xs) == n {
				break
			}
		}
		return xs
	}
	for i, j := range []struct {
		name string
		v    any
	}{{"issues", issues(25)}, {"lock", lock(60)}, {"metrics", metrics(80)}, {"dpkg", dpkg(0, 25)}, {"issues-2", issues(30)}} {
		p, _ := json.MarshalIndent(j.v, "", "  ")
		if i == 4 {
			p, _ = json.MarshalIndent(j.v, "", "    ")
		}
		add("json-pretty", fmt.Sprintf("%02d-%s", i+1, j.name), "generated", cut(string(p)+"\n", 0, chunkSize*2))
		m, _ := json.Marshal(j.v)
		add("json-min", fmt.Sprintf("%02d-%s", i+1, j.name), "generated", string(m[:min(len(m), chunkSize)]))
	}
	for i, j := range []struct {
		name string
		v    any
	}{{"dpkg-2", dpkg(100, 30)}, {"metrics-2", metrics(60)}, {"lock-2", lock(40)}} {
		p, _ := json.MarshalIndent(j.v, "", "  ")
		add("json-pretty", fmt.Sprintf("%02d-%s", i+6, j.name), "generated", cut(string(p)+"\n", 0, chunkSize*2))
		m, _ := json.Marshal(j.v)
		add("json-min", fmt.Sprintf("%02d-%s", i+6, j.name), "generated", string(m[:min(len(m), chunkSize)]))
	}

	// Logs.
	var b strings.Builder
	paths := []string{"/", "/api/v1/jobs", "/api/v1/jobs/%d", "/static/app.%s.js", "/healthz", "/login", "/api/v1/users/%d/tokens"}
	agents := []string{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"curl/8.5.0", "Go-http-client/1.1", "python-requests/2.31.0", "kube-probe/1.30"}
	for i := 0; b.Len() < chunkSize; i++ {
		p := pick(paths)
		if strings.Contains(p, "%d") {
			p = fmt.Sprintf(p, rng.IntN(100000))
		} else if strings.Contains(p, "%s") {
			p = fmt.Sprintf(p, hexs(4))
		}
		fmt.Fprintf(&b, "10.%d.%d.%d - - [30/Nov/2026:%02d:%02d:%02d +0000] \"%s %s HTTP/1.1\" %d %d \"-\" \"%s\"\n",
			rng.IntN(256), rng.IntN(256), rng.IntN(256), 8+i/3600, (i/60)%60, i%60, pick([]string{"GET", "GET", "POST", "PUT"}), p,
			[]int{200, 200, 200, 304, 404, 500}[rng.IntN(6)], rng.IntN(50000), pick(agents))
	}
	add("logs", "05-nginx-access", "generated", b.String())
	b.Reset()
	for i := 0; b.Len() < chunkSize; i++ {
		fmt.Fprintf(&b, `{"time":"2026-11-30T09:%02d:%02d.%03dZ","level":"%s","msg":"%s","job":"j-%s","tenant":"t%d","duration_ms":%d}`+"\n",
			(i/60)%60, i%60, rng.IntN(1000), pick([]string{"INFO", "INFO", "WARN", "ERROR", "DEBUG"}), sentence(3+rng.IntN(5)), hexs(6), rng.IntN(20), rng.IntN(9000))
	}
	add("logs", "06-slog-json", "generated", b.String())
	b.Reset()
	for i := 0; b.Len() < chunkSize; i++ {
		name := "Test" + strings.ToUpper(pick(words)[:1]) + pick(words)[1:] + strings.ToUpper(pick(words)[:1]) + pick(words)[1:]
		fmt.Fprintf(&b, "=== RUN   %s\n", name)
		for k := range rng.IntN(4) {
			fmt.Fprintf(&b, "=== RUN   %s/%s_%d\n    %s_test.go:%d: got %d, want %d\n--- PASS: %s/%s_%d (0.%02ds)\n", name, pick(words), k, pick(words), 20+rng.IntN(400), rng.IntN(99), rng.IntN(99), name, pick(words), k, rng.IntN(100))
		}
		fmt.Fprintf(&b, "--- %s: %s (%d.%02ds)\n", pick([]string{"PASS", "PASS", "PASS", "FAIL", "SKIP"}), name, rng.IntN(3), rng.IntN(100))
	}
	add("logs", "07-go-test-v", "generated", b.String())
	b.Reset()
	for i := 0; b.Len() < chunkSize; i++ {
		fmt.Fprintf(&b, "Nov 30 09:%02d:%02d box%d %s[%d]: %s\n", (i/60)%60, i%60, rng.IntN(4),
			pick([]string{"systemd", "kernel", "sshd", "containerd", "airlock"}), 100+rng.IntN(40000), sentence(4+rng.IntN(10)))
	}
	add("logs", "08-syslog", "generated", b.String())
	b.Reset()
	for i := 0; b.Len() < chunkSize; i++ {
		fmt.Fprintf(&b, "ts=2026-11-30T10:%02d:%02dZ level=%s caller=%s.go:%d component=%s msg=%q req_id=%s latency=%dms\n",
			(i/60)%60, i%60, pick([]string{"info", "warn", "error"}), pick(words), rng.IntN(900), pick(words), sentence(3+rng.IntN(6)), hexs(8), rng.IntN(2000))
	}
	add("logs", "09-logfmt", "generated", b.String())

	// Base64.
	randBytes := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.UintN(256))
		}
		return p
	}
	wrap := func(s string, w int) string {
		var b strings.Builder
		for len(s) > w {
			b.WriteString(s[:w] + "\n")
			s = s[w:]
		}
		return b.String() + s + "\n"
	}
	add("base64", "01-random-mime", "generated", wrap(base64.StdEncoding.EncodeToString(randBytes(9000)), 76))
	add("base64", "02-random-line", "generated", base64.StdEncoding.EncodeToString(randBytes(9000)))
	add("base64", "03-text", "base64 of /usr/share/vim/vim90/tutor/tutor", wrap(base64.StdEncoding.EncodeToString([]byte(cut(read("/usr/share/vim/vim90/tutor/tutor"), 3000, 9000))), 76))
	add("base64", "04-url-safe", "generated", wrap(base64.RawURLEncoding.EncodeToString(randBytes(9000)), 64))
	add("base64", "05-binary", "base64 of /usr/bin/ls", wrap(base64.StdEncoding.EncodeToString([]byte(cut(read("/usr/bin/ls"), 20000, 9000))), 76))
	add("base64", "06-pem", "generated", "-----BEGIN CERTIFICATE-----\n"+wrap(base64.StdEncoding.EncodeToString(randBytes(1400)), 64)+
		"-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n"+wrap(base64.StdEncoding.EncodeToString(randBytes(1200)), 64)+"-----END PRIVATE KEY-----\n")
	add("base64", "07-json-blobs", "generated", func() string {
		var b strings.Builder
		for range 40 {
			fmt.Fprintf(&b, `{"name":"%s.bin","data":"%s"}`+"\n", pick(words), base64.StdEncoding.EncodeToString(randBytes(120+rng.IntN(200))))
		}
		return b.String()
	}())
	add("base64", "08-go-source", "base64 of /usr/local/go/src/sort/sort.go", wrap(base64.StdEncoding.EncodeToString([]byte(cut(read("/usr/local/go/src/sort/sort.go"), 0, 9000))), 76))
	add("base64", "09-random-short", "generated", wrap(base64.StdEncoding.EncodeToString(randBytes(6000)), 100))

	// Hex.
	xxd := func(p []byte) string {
		var b strings.Builder
		for off := 0; off < len(p); off += 16 {
			fmt.Fprintf(&b, "%08x: ", off)
			line := p[off:min(off+16, len(p))]
			for i := 0; i < 16; i += 2 {
				if i < len(line) {
					fmt.Fprintf(&b, "%02x", line[i])
					if i+1 < len(line) {
						fmt.Fprintf(&b, "%02x", line[i+1])
					}
				}
				b.WriteByte(' ')
			}
			b.WriteByte(' ')
			for _, c := range line {
				if c < 32 || c > 126 {
					c = '.'
				}
				b.WriteByte(c)
			}
			b.WriteByte('\n')
		}
		return b.String()
	}
	add("hex", "01-xxd-ls", "xxd of /usr/bin/ls", xxd([]byte(read("/usr/bin/ls")[30000:34000])))
	add("hex", "02-xxd-random", "generated", xxd(randBytes(4000)))
	add("hex", "03-sha256sums", "generated", func() string {
		var b strings.Builder
		for range 200 {
			fmt.Fprintf(&b, "%s  %s/%s.%s\n", hexs(32), pick(words), pick(words), pick([]string{"go", "tar.gz", "deb", "json"}))
		}
		return b.String()
	}())
	add("hex", "04-long-string", "generated", hexs(6000))
	add("hex", "05-go-bytes", "generated", func() string {
		var b strings.Builder
		b.WriteString("var blob = []byte{\n")
		p := randBytes(2400)
		for i := 0; i < len(p); i += 12 {
			b.WriteString("\t")
			for _, c := range p[i:min(i+12, len(p))] {
				fmt.Fprintf(&b, "0x%02x, ", c)
			}
			b.WriteString("\n")
		}
		return b.String() + "}\n"
	}())
	add("hex", "06-uuids", "generated", func() string {
		var b strings.Builder
		for range 300 {
			h := hexs(16)
			fmt.Fprintf(&b, "%s-%s-%s-%s-%s\n", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
		}
		return b.String()
	}())
	add("hex", "07-xxd-text", "xxd of /usr/local/go/src/sort/sort.go", xxd([]byte(cut(read("/usr/local/go/src/sort/sort.go"), 0, 4000))))
	add("hex", "08-upper", "generated", strings.ToUpper(wrap(hexs(4000), 64)))
	add("hex", "09-git-oids", "generated", func() string {
		var b strings.Builder
		for range 250 {
			fmt.Fprintf(&b, "%s %s\n", hexs(20), sentence(3+rng.IntN(5)))
		}
		return b.String()
	}())
}
