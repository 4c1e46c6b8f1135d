package shellread_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/policy/shellread"
)

// diffShell is one real shell the differential tests run strings with,
// and the dialect Read must read them in.
type diffShell struct {
	name, path string
	dialect    shellread.Dialect
}

// diffHarness runs shell strings with stub programs on PATH that log their
// names, and checks the property every differential test holds: each stub
// the shell ran is a program Read reported, or Read refused the string (an
// error, or a command marked Undecidable or Risk).
type diffHarness struct {
	dir, stubs, work string
	shells           []diffShell
	stub             map[string]bool
	n                atomic.Int64
	bwrap            string // when set, each shell runs confined by it
}

var diffStubs = []string{"foo", "bar", "baz", "cat"}

func newDiffHarness(t testing.TB) *diffHarness {
	t.Helper()
	h := &diffHarness{dir: t.TempDir(), stub: map[string]bool{}}
	for _, sh := range []diffShell{{"bash", "", shellread.Bash}, {"dash", "", shellread.POSIX}} {
		p, err := exec.LookPath(sh.name)
		if err != nil {
			testsupport.MissingPart(t, "no %s on this host to compare with", sh.name)
			continue
		}
		sh.path = p
		h.shells = append(h.shells, sh)
	}
	if len(h.shells) == 0 {
		testsupport.Missing(t, "no bash or dash on this host to compare with")
	}
	h.stubs = filepath.Join(h.dir, "bin")
	h.work = filepath.Join(h.dir, "work")
	for _, d := range []string{h.stubs, h.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range diffStubs {
		// Each run logs to its own file (DIFF_LOG), so runs are parallel.
		script := "#!/bin/sh\necho " + n + " >> \"$DIFF_LOG\"\n"
		if err := os.WriteFile(filepath.Join(h.stubs, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		h.stub[n] = true
	}
	// Real wrappers, so that what they start runs too.
	for _, w := range []string{"env", "nice", "timeout", "xargs", "find", "sh", "bash", "dash", "stdbuf", "setsid", "nohup", "echo", "sed", "true", "sleep"} {
		if p, err := exec.LookPath(w); err == nil {
			if err := os.Symlink(p, filepath.Join(h.stubs, w)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

// expand puts the harness's directories into a case.
func (h *diffHarness) expand(c string) string {
	return strings.ReplaceAll(strings.ReplaceAll(c, "STUBS2", h.stubs), "STUBS", h.stubs)
}

// ran runs src with sh and returns the stubs it started, waiting for its
// background jobs too.
func (h *diffHarness) ran(t testing.TB, sh diffShell, src string) map[string]bool {
	logFile := filepath.Join(h.dir, "log"+strconv.FormatInt(h.n.Add(1), 10))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh.path, "-c", src)
	if h.bwrap != "" {
		cmd = exec.CommandContext(ctx, h.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
			"--tmpfs", "/tmp", "--bind", h.dir, h.dir, "--unshare-all", "--die-with-parent", "--chdir", h.work, "--", sh.path, "-c", src)
	}
	cmd.Dir = h.work
	cmd.Env = []string{"PATH=" + h.stubs, "DIFF_LOG=" + logFile}
	cmd.Stdin = strings.NewReader("")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	_ = cmd.Run() // the exit status does not matter; what ran does
	if cmd.Process != nil {
		for i := 0; i < 200 && syscall.Kill(-cmd.Process.Pid, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	data, _ := os.ReadFile(logFile)
	out := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if h.stub[l] {
			out[l] = true
		}
	}
	return out
}

// check runs src with every shell and reports a program the shell ran that
// Read neither reported nor refused. It returns whether any shell ran a
// stub and whether Read decided the string (refused nothing).
func (h *diffHarness) check(t testing.TB, src string) (ranAny, decided bool) {
	t.Helper()
	decided = true
	for _, sh := range h.shells {
		ran := h.ran(t, sh, src)
		ranAny = ranAny || len(ran) > 0
		cmds, err := shellread.ReadIn(src, sh.dialect)
		if err != nil {
			decided = false
			continue // an error escalates
		}
		flagged := false
		seen := map[string]bool{}
		for _, c := range cmds {
			flagged = flagged || c.Undecidable != "" || c.Risk != ""
			if len(c.Argv) > 0 {
				seen[filepath.Base(c.Argv[0])] = true
			}
		}
		decided = decided && !flagged
		for p := range ran {
			if !seen[p] && !flagged {
				t.Errorf("%s ran %s, but Read(%q, %s) reports %q and flags nothing", sh.name, p, src, sh.dialect, argvs(cmds))
			}
		}
	}
	return ranAny, decided
}

// diffSeeds reads the seed corpus: the hand-written cases and the attack
// strings, one Go-quoted string a line.
func diffSeeds(t testing.TB) []string {
	data, err := os.ReadFile("testdata/differential/seeds.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, l := range strings.Split(string(data), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		s, err := strconv.Unquote(l)
		if err != nil {
			t.Fatalf("testdata/differential/seeds.txt:%d: %v", i+1, err)
		}
		out = append(out, s)
	}
	if len(out) < 100 {
		t.Fatalf("got %d seeds, want at least 100", len(out))
	}
	return out
}

// FuzzDifferential holds the differential property for any string: what
// bash and dash run, Read reports or refuses. Its seed corpus runs as an
// ordinary test. While fuzzing, the shells run in a bubblewrap box whose
// only writable place is the harness's directory, since a fuzzed string
// may be anything.
func FuzzDifferential(f *testing.F) {
	for _, s := range diffSeeds(f) {
		f.Add(s)
	}
	h := newDiffHarness(f)
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			f.Skip("fuzzing runs arbitrary strings in real shells and needs bwrap to confine them")
		}
		h.bwrap = bw
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 || strings.ContainsAny(src, "\x00\r") {
			return // the reader refuses these outright
		}
		h.check(t, h.expand(src))
	})
}

// TestDifferentialGenerated runs a generated set of strings — fragments that
// name a program in every quoting, placed in every context that runs it
// (substitutions, groups, lists, here-documents, arithmetic, functions,
// aliases, nested shells, wrappers), two levels deep — with bash and dash.
func TestDifferentialGenerated(t *testing.T) {
	h := newDiffHarness(t)
	gen := generateDifferential()
	if len(gen) < 1000 {
		t.Fatalf("generated %d strings, want at least 1000", len(gen))
	}
	if testing.Short() {
		// Every seventh string: each fragment and context still occurs.
		var some []string
		for i := 0; i < len(gen); i += 7 {
			some = append(some, gen[i])
		}
		gen = some
	}
	var ranAny, decided atomic.Int64
	// The runs wait on process start-up, not the processor: a few
	// workers at a time.
	work := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for src := range work {
				r, d := h.check(t, src)
				if r {
					ranAny.Add(1)
					if d {
						decided.Add(1)
					}
				}
			}
		}()
	}
	for _, src := range gen {
		work <- src
	}
	close(work)
	wg.Wait()
	t.Logf("%d generated strings, %d shells: %d ran a stub, %d of those decided without refusing", len(gen), len(h.shells), ranAny.Load(), decided.Load())
	// A generator whose strings run nothing, or a reader that refuses
	// everything, would pass the property without showing anything.
	if ranAny.Load() < int64(len(gen))/2 {
		t.Errorf("only %d of %d generated strings ran a stub program", ranAny.Load(), len(gen))
	}
	if decided.Load() < ranAny.Load()/4 {
		t.Errorf("only %d of %d strings that ran a stub were decided; the reader refuses too much", decided.Load(), ranAny.Load())
	}
}

// diffFragments name a program (with an argument) in every spelling.
var diffFragments = []string{
	"foo x", `"foo" x`, "f''oo x", `f\oo x`, "\\foo x", `$'foo' x`, `$"foo" x`, "fo{o,} x", "{foo,bar} x",
	"bar", "command foo", "env foo", "exec foo", "nice foo", "timeout 5 foo", "x=1 foo", "FOO=$(bar) baz",
	"foo $(bar)", "foo `bar`", "foo \"$(bar)\"", "foo ${x:-$(bar)}", "foo $((1+$(bar)))", "foo >/dev/null",
	"foo 2>&1", ">/dev/null foo", "foo <&-", "foo <<<x", "foo &>/dev/null", "echo x | foo", "foo | cat",
	"foo & wait", "foo &>/dev/null bar", "echo $'\\';foo;#'", "((foo x))", "(foo)", "{ foo; }", "! foo",
	"[[ $(foo) ]]", "time foo", "eval foo", "eval \"foo x\"", "set -- foo; \"$@\"", "f=foo; $f",
	"sh -c foo", "bash -c foo", "dash -c foo", "echo foo | sh", "sh <<<foo", "true && foo", "false || foo",
	"false && foo", "foo; bar", "foo\nbar", "foo \\\nbar", "echo $(foo)", "echo \"`foo`\"", "let x=$(foo)",
	"a=$(foo)", "export a=$(foo)", "local a=$(foo)", "declare a=$(foo)", "read x <<< $(foo)", ": $(foo)",
	"f() { foo; }; f", "f() { foo; } | true; f", "foo() { bar; }; foo", "alias a=foo; a", "trap foo EXIT",
	"x='a[$(foo)]'; echo $((x))", "x=\"a[\\$(foo)]\"; echo $((x))", "case $(foo) in *) bar;; esac",
	"cat <<E\n$(foo)\nE", "cat <<'E'\n$(foo)\nE", "cat <<E | sh\nfoo\nE", "cat <<$'E'\n$E\nfoo\nE",
	"echo x | xargs foo", "find . -maxdepth 0 -exec foo {} +", "while foo; do break; done", "until bar; do break; done",
	"for i in 1; do foo; done", "if foo; then bar; fi", "foo |& cat", "coproc foo", "cat <(foo)", "echo >(foo)",
	"printf -v x foo; $x", "IFS=o; x=fXoXo; $x", "PS4='$(foo)'; set -x; :",
}

// diffContexts place a fragment; X is replaced by it.
var diffContexts = []string{
	"X", "(X)", "{ X; }", "echo $(X)", "echo `X`", "true; X", "true && X", "true | X", "X | true",
	"if true; then X; fi", "for i in 1; do X; done", "case a in a) X;; esac", "g() { X; }; g",
	"while true; do X; break; done", "x=$(X)", "echo \"$(X)\"", ": ${y:-$(X)}", "X 2>/dev/null",
	"eval 'X'", "sh -c 'X'", "bash -c 'X'", "env sh -c 'X'", "cat <<E\n$(X)\nE", "true\nX",
	"X &\nwait", "! X", "(true; X)",
}

// generateDifferential builds every context around every fragment, and a
// second level for the contexts that nest, without the quote clashes
// that would make the outer string a different one.
func generateDifferential() []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	place := func(ctx, frag string) (string, bool) {
		if strings.Contains(ctx, "'X'") && strings.Contains(frag, "'") {
			return "", false
		}
		if strings.Contains(ctx, "`X`") && strings.Contains(frag, "`") {
			return "", false
		}
		if strings.Contains(ctx, "<<E") && strings.Contains(frag, "\nE") {
			return "", false
		}
		return strings.ReplaceAll(ctx, "X", frag), true
	}
	for _, f := range diffFragments {
		for _, c := range diffContexts {
			if s, ok := place(c, f); ok {
				add(s)
			}
		}
	}
	// Two levels: every context inside a few that nest differently.
	for _, outer := range []string{"(X)", "echo $(X)", "sh -c 'X'", "g() { X; }; g", "eval 'X'"} {
		for _, inner := range diffContexts[:12] {
			for _, f := range diffFragments[:40] {
				s, ok := place(inner, f)
				if !ok {
					continue
				}
				if s, ok = place(outer, s); ok {
					add(s)
				}
			}
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func argvs(cmds []shellread.Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, strings.Join(c.Argv, " "))
	}
	return out
}
