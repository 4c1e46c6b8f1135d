package shellread_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/policy/shellread"
)

// differentialCases are run by real bash with stub programs on PATH; what
// bash runs must be among the commands Read reports, or Read must have
// marked the string as undecidable or risky.
var differentialCases = []string{
	"foo a; bar b", "foo $(bar x)", "foo `bar x`", "foo <(bar x)", "x=$(foo) bar", "{ foo; bar; }", "(foo) | bar",
	"foo && bar || baz", "!(foo)", "! foo", "if foo; then bar; fi", "case a in a) foo;; esac",
	"for i in 1 2; do foo $i; done", "f(){ foo; }; f", "eval 'foo x'", "eval foo y", "command foo",
	"foo \\\nbar", `"fo"o`, `f\oo`, `$'\x66oo'`, "foo \"a\\\nb\"", "foo & bar", "time foo", "foo |& bar",
	"a=1; foo ${a}", "[[ $(foo) ]]", "(( $(foo) ))", "echo ${x:-$(foo)}", "arr=($(foo)); bar",
	"declare x=$(foo)", "exec foo", "trap 'foo' EXIT", "foo # bar", "foo;bar&baz", "{foo,bar}", "fo{o,}",
	"$(echo foo)", "cat <<< $(foo)", ">$(foo)", "foo=bar baz", "\\foo", "'foo' bar", "f''oo",
	"foo <<X\n$(bar)\nX\n", "case $(foo) in *) bar;; esac", "while foo; do break; done",
	"function g { foo; }; g", "env foo", "env -S 'foo x'", "env --split-string='bar x'", "nice -n 1 foo",
	"nice -5 foo", "timeout 5 foo", "timeout -s KILL 5 foo", "echo x | xargs foo", "echo x | xargs -I{} bar {}",
	"find STUBS -name foo -exec bar {} \\;", "find STUBS -name foo -execdir bar {} +", "sh -c 'foo; bar'",
	"bash -c \"eval 'foo'\"", "stdbuf -oL foo", "setsid -w foo", "nohup foo", "sh <<EOF\nfoo\nEOF\n",
	"bash <<< 'bar'", "env -- foo", "command -- foo", "exec -a x foo", "builtin eval foo",
	"sh -c 'foo \"$1\"' _ x", "bash -o pipefail -c 'foo|bar'", "sh -ec 'foo'", "sh -c -x 'bar'",
	"echo a | xargs -n1 -P2 foo", "eval \"$(echo foo)\"", "x='foo'; eval $x", "f=foo; $f",
	"shopt -s expand_aliases; alias a=foo\na", "set -- foo; $1", "trap 'bar' DEBUG; :", "PS4='$(foo)'; set -x; :",
	"BASH_ENV=/dev/null bash -c bar", "printf -v x foo; $x", "if !(foo); then :; fi", "{ foo; } >/dev/null",
	"foo() { bar; }; foo", "command_not_found_handle() { bar; }; nosuch", "exec 3< <(foo); cat <&3",
	"[ -n \"$(foo)\" ]", "let x=$(foo)", "time -p foo", "coproc bar { foo; }; wait", "IFS=o; x=fXoXo; $x",
	"read -r x <<< foo; $x", "<(foo)", "a[$(foo)]=1", ": ${a[$(foo)]}", "[[ -v a[$(foo)] ]]",
	"x='a[$(foo)]'; (( x ))", "x='a[`foo`]'; echo $(( x ))", "case a in a) foo;& b) bar;; esac", "{ foo; }&",
	"echo x | sed '1e foo'", "echo x | sed 's/.*/foo/e'", "echo x | sed -n -e p -e '$e bar'",
	"echo x | sed '1a y; e foo'", "echo x | sed --expression='1e foo'",
	"foo </dev/null >&-", "cat <<-EOF\n\t$(foo)\n\tEOF\n", `echo "$(foo)"`, `x=$'foo'; eval "$x"`, "mapfile -t a <<< foo; ${a[0]}", "cd STUBS && ./foo", "PATH=STUBS2; baz",
	// A carriage return is a blank to the parser, a word character to bash.
	"cat x \r# $(foo)", "cat\r$(foo)", "cat x\r\nfoo", "echo x | awk '{system(\"foo\")}'", "echo x | awk '{print | \"foo\"}'",
	"setsid foo", "sed -n p x", "echo x | tee y", "echo x | dd of=y 2>/dev/null",
}

func TestDifferentialBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		testsupport.Missing(t, "no bash on this host to compare with")
	}
	dir := t.TempDir()
	stubs := filepath.Join(dir, "bin")
	work := filepath.Join(dir, "work")
	for _, d := range []string{stubs, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"foo", "bar", "baz", "cat"}
	for _, n := range names {
		// Each case logs to its own file (DIFF_LOG), so cases run in
		// parallel.
		script := "#!" + bash + "\necho " + n + " >> \"$DIFF_LOG\"\n"
		if err := os.WriteFile(filepath.Join(stubs, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Real wrappers, so that what they start runs too.
	for _, w := range []string{"env", "nice", "timeout", "xargs", "find", "sh", "bash", "stdbuf", "setsid", "nohup", "echo", "sed"} {
		if p, err := exec.LookPath(w); err == nil {
			if err := os.Symlink(p, filepath.Join(stubs, w)); err != nil {
				t.Fatal(err)
			}
		}
	}
	stub := map[string]bool{}
	for _, n := range names {
		stub[n] = true
	}
	for i, c := range differentialCases {
		src := strings.ReplaceAll(strings.ReplaceAll(c, "STUBS2", stubs), "STUBS", stubs)
		logFile := filepath.Join(dir, "log"+strconv.Itoa(i))
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bash, "-c", src)
			cmd.Dir = work
			cmd.Env = []string{"PATH=" + stubs, "DIFF_LOG=" + logFile}
			_ = cmd.Run() // exit status does not matter; what ran does
			data, _ := os.ReadFile(logFile)
			ran := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if stub[l] {
					ran[l] = true
				}
			}
			cmds, err := shellread.Read(src)
			if err != nil {
				// A refusal the reader makes on purpose (a carriage return,
				// which bash reads differently) escalates like any error.
				if len(ran) > 0 && !strings.Contains(err.Error(), "carriage return") {
					t.Errorf("Read: %v, but bash ran %v", err, keys(ran))
				}
				return // an error escalates
			}
			flagged := false
			seen := map[string]bool{}
			for _, c := range cmds {
				flagged = flagged || c.Undecidable != "" || c.Risk != ""
				if len(c.Argv) > 0 {
					seen[filepath.Base(c.Argv[0])] = true
				}
			}
			for p := range ran {
				if !seen[p] && !flagged {
					t.Errorf("bash ran %s, but Read reports %q and flags nothing", p, argvs(cmds))
				}
			}
		})
	}
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
