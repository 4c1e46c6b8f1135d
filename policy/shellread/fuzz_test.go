package shellread

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readSeeds are the seed corpus of FuzzRead: the golden scripts, the table
// cases' shapes, and inputs built to nest deeply.
func readSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/read/*.txt")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		src, _, _ := strings.Cut(string(data), goldenSep)
		f.Add(src)
	}
	nested := "rm -rf /"
	for i := 0; i < MaxDepth+2; i++ {
		nested = "sh -c " + shQuote(nested)
	}
	for _, s := range []string{
		"", " ", "\n", ";", "&", "|", "echo (", "$(", "`", "'", "\"", "\\", "${", "$((", "<<", "<<EOF",
		strings.Repeat("(", 700) + "ls" + strings.Repeat(")", 700),
		strings.Repeat("$(", 300) + "id" + strings.Repeat(")", 300),
		strings.Repeat("{ ", 300) + "id;" + strings.Repeat(" }", 300),
		strings.Repeat("if true; then ", 300) + "id" + strings.Repeat("; fi", 300),
		strings.Repeat("eval ", 200) + "id",
		strings.Repeat("env ", 500) + "id",
		strings.Repeat("sudo -u x ", 100) + "id",
		strings.Repeat("a | ", 2000) + "b",
		strings.Repeat("`echo `", 300),
		strings.Repeat("x=$(y) ", 500) + "z",
		strings.Repeat("f() { f | f & }; ", 50) + "f",
		strings.Repeat("find . -exec find . -exec ", 20) + "rm {} \\; \\;",
		nested,
		"env -S 'env -S \"env -S id\"'",
		"xargs xargs xargs xargs xargs xargs xargs xargs xargs xargs id",
		"git -c core.fsmonitor='git -c core.fsmonitor=\"git -c core.pager=id log\" status' status",
		"cat <<A <<B\n$(a)\nA\n$(b)\nB\n",
		"$'\\x00rm' -rf /", "$'\\u0000' x", "$'\\c' x", "$'\\x' $'\\u' $'\\777'",
		"echo ${x@P} ${!y} ${#z} ${a[$(id)]} ${b/$(c)/$(d)}",
		"select x in $(a); do b; done", "coproc x { y; }", "time", "!", "((", "[[ -f $(x) ]]",
		"function f { g; }; f", "cd; cd -; pushd /x; popd; ls",
		"sed -n -e '1e id' -e 's/a/b/w out' -e '/x/,/y/{s,a,b,e;}' f", "sed '1a x; e y' f", "sed -E 'y/ab/cd/;$!N;\\%x%d' f",
		"sed --expression=e --sandbox f", "sed -i -f s.sed f", "!(rm -rf /)", "x='a[$(id)]'; ((x))",
		`find . -fprint out -fls "$x"`, "strace -f -o x sh -c id", "capsh -- -c id", "hyperfine -p a 'b' 'c'",
	} {
		f.Add(s)
	}
}

// FuzzRead checks that Read never panics, stays within its limits, and
// returns commands whose cross references are valid; the built-in rules and
// Canon are run over every command too.
func FuzzRead(f *testing.F) {
	readSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		cmds, err := Read(src)
		if err != nil {
			return
		}
		if len(cmds) > MaxCommands {
			t.Fatalf("got %d commands, more than MaxCommands", len(cmds))
		}
		for i, c := range cmds {
			if c.Argv == nil {
				t.Fatalf("command %d: nil Argv", i)
			}
			if c.Parent < -1 || c.Parent >= len(cmds) || c.Parent == i {
				t.Fatalf("command %d: parent %d out of range", i, c.Parent)
			}
			for _, u := range c.Upstream {
				if u < 0 || u >= len(cmds) {
					t.Fatalf("command %d: upstream %d out of range", i, u)
				}
			}
			for _, d := range c.Dynamic {
				if d < 0 || d >= len(c.Argv) {
					t.Fatalf("command %d: dynamic index %d outside argv %q", i, d, c.Argv)
				}
			}
			if len(c.Via) > MaxDepth*4 {
				t.Fatalf("command %d: via %q longer than the nesting bound", i, c.Via)
			}
			Catastrophic(cmds, i, testWhere)
			if len(c.Argv) > 0 {
				canonStable(t, c.Argv[0], c.Argv[1:])
			}
		}
	})
}

// FuzzCanon checks that Canon never panics, keeps every operand, and is
// stable when applied to its own output.
func FuzzCanon(f *testing.F) {
	for prog := range canonSpecs() {
		f.Add(prog, "-rf --force x -- -y")
		f.Add(prog, "-o file --output=f -ofile -- a")
	}
	for _, s := range []string{"xzf a.tgz -C d", "-i.bak -e p f", "push --force-with-lease=main origin +main",
		"-c a=b -C d commit -am msg", "-R -rwx d", "= == -= --= -", "--", "-- --", "-", "--o", "--output"} {
		f.Add("tar", s)
		f.Add("git", s)
		f.Add("sed", s)
		f.Add("chmod", s)
		f.Add("curl", s)
		f.Add("unknown", s)
	}
	f.Fuzz(func(t *testing.T, prog, args string) {
		canonStable(t, prog, strings.Fields(args))
	})
}

func canonStable(t *testing.T, prog string, args []string) {
	t.Helper()
	once := Canon(prog, args)
	twice := Canon(prog, once)
	if !cmp.Equal(once, twice) {
		t.Fatalf("Canon(%q, %q) = %q, but applied again gives %q", prog, args, once, twice)
	}
}

// FuzzStartsArgv checks that StartsArgv is false only when ReadArgv finds
// nothing beyond argv itself and marks nothing.
func FuzzStartsArgv(f *testing.F) {
	for _, s := range []string{"git status", "git -c core.pager=cat log", "git push --exec=x o", "find . -exec rm {} ;",
		"rg --pre=x y", "tar --checkpoint-action=exec=x -c .", "ssh -oProxyCommand=x h", "git rebase --exec=make",
		"git clone ext::sh", "man -P less ls", "sort --compress-program=gzip f", "zip --unzip-command=x a",
		"tee airlock.yaml", "dd if=x of=y", "sort -o y x", "sort x", "git log --output=x", "git format-patch -o d",
		"sed 1e\x20x f", "awk BEGIN{system(1)}", "go test -exec=x", "setsid x", "wget -b u", "find . -fprint f",
		"cp a b", "install --strip-program=x a b", "rm -rf x/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Fields(s)
		if len(argv) == 0 || StartsArgv(argv) {
			return
		}
		cmds, err := ReadArgv(argv)
		if err != nil {
			return
		}
		c := cmds[0]
		if len(cmds) != 1 || c.Undecidable != "" || c.Risk != "" || c.ArgsFromInput || len(c.Redirects) > 0 || c.Background {
			t.Fatalf("StartsArgv(%q) is false, but ReadArgv found %d commands (undecidable %q, risk %q, redirects %v, background %v)",
				argv, len(cmds), c.Undecidable, c.Risk, c.Redirects, c.Background)
		}
	})
}
