package shellread

import (
	"regexp"
	"strings"
	"sync"
)

// awk and go look like a text tool and a compiler, yet both run programs
// named on their command line: awk's system(), its pipes and its print
// redirections; go's -exec, -toolexec and -vettool.

// awkValued are awk options that take a value in the next word (POSIX awk
// and gawk's short forms).
const awkValued = "fvFeEilL"

// awkRuns matches awk program text that runs a command or writes a file:
// system(), a pipe to or from a command, print/printf redirected with > or
// >>, and gawk's @load of a shared library.
var awkRuns = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`system|\||\bprintf?\b[^;{}\n]*>|@load|@include`)
})

// awkProgram reads the program of the awk at idx. The program text itself
// is not followed: a program that could run a command or write a file is
// Undecidable, and so is one read from a file or only known at run time.
func (r *reader) awkProgram(idx int) {
	c := &r.out[idx]
	argv := c.Argv
	var texts []int // argv indexes of program text
	fromFile := false
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _, has := strings.Cut(a[2:], "=")
			switch {
			case name == "":
			case strings.HasPrefix("file", name), strings.HasPrefix("exec", name), strings.HasPrefix("include", name),
				strings.HasPrefix("load", name):
				fromFile = true
			case strings.HasPrefix("source", name):
				if has {
					texts = append(texts, i)
				} else if i+1 < len(argv) {
					i++
					texts = append(texts, i)
				}
				continue
			}
			if !has && strings.HasPrefix("field-separator", name) || strings.HasPrefix("assign", name) {
				i++
			}
			continue
		}
		// A short option: the value is the rest of the word or the next.
		k := strings.IndexAny(a[1:], awkValued)
		if k < 0 {
			continue
		}
		opt := a[1+k]
		valAt := i
		if 2+k >= len(a) {
			i++
			valAt = i
		}
		switch opt {
		case 'f', 'E', 'i', 'l':
			fromFile = true
		case 'e':
			texts = append(texts, valAt)
		}
	}
	if fromFile {
		r.undecidable(idx, "awk runs a program read from a file or a library, which may run commands")
		return
	}
	if len(texts) == 0 && i < len(argv) {
		texts = append(texts, i)
	}
	for _, t := range texts {
		if t >= len(argv) {
			continue
		}
		if isDynamic(c, t) {
			r.undecidable(idx, "awk runs a program only known at run time")
			return
		}
		if awkRuns().MatchString(argv[t]) {
			r.undecidable(idx, "the awk program may run commands or write files (system, a pipe or a print redirection)")
			return
		}
	}
}

// goExec reads go's options that run another program: `go test -exec P`,
// `go build -toolexec 'P ARGS'`, `go vet -vettool P`. Their value is a
// command line (split on spaces, not run by a shell). `go env -w` stores
// settings (GOFLAGS, CC, …) that later go commands act on.
func (r *reader) goExec(idx int, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			return
		}
		if i == 2 && argv[1] == "env" && (a == "-w" || a == "-u") {
			r.undecidable(idx, "go env -w stores settings that make later go commands run other programs")
			return
		}
		name := strings.TrimLeft(a, "-")
		if len(a)-len(name) < 1 || len(a)-len(name) > 2 {
			continue
		}
		name, val, has := strings.Cut(name, "=")
		switch name {
		case "exec", "toolexec", "vettool":
		default:
			continue
		}
		at := i
		if !has {
			if i+1 >= len(argv) {
				return
			}
			i++
			at, val = i, argv[i]
		}
		if isDynamic(c, at) {
			r.undecidable(idx, "go -%s runs a program only known at run time", name)
			return
		}
		words := strings.Fields(val)
		if len(words) == 0 {
			continue
		}
		if strings.ContainsAny(val, "'\"\\") {
			r.undecidable(idx, "go -%s runs a quoted command line", name)
			return
		}
		r.inner(idx, 0, s, innerOpts{argv: words, fromInput: true})
		c = &r.out[idx]
		argv = c.Argv
	}
}

// daemonStarters leave a process running after they return; the value
// lists the options that make them do so ("" = always). Such a command is
// Background, so a policy with shell.spawn false refuses it.
var daemonStarters = map[string][]string{
	"daemonize": {""}, "start-stop-daemon": {"-b", "--background"}, "tmux": {""}, "screen": {"-d", "-D", "-dm", "-dmS", "-Dm", "-DmS"},
	"dbus-launch": {""}, "dbus-daemon": {"--fork"}, "ssh-agent": {""}, "gpg-agent": {"--daemon"},
	"wget": {"-b", "--background"}, "wget2": {"-b", "--background"}, "systemd-run": {""}, "at": {""}, "batch": {""},
	"disown": {""},
}

// daemon marks the command at idx Background when it starts a daemon.
// at and batch also read the commands they schedule from their input.
func (r *reader) daemon(idx int, base string) {
	opts, ok := daemonStarters[base]
	if !ok {
		return
	}
	c := &r.out[idx]
	switch base {
	case "systemd-run":
		// --scope, --wait, --pty and --pipe keep the program in the
		// foreground.
		for _, a := range c.Argv[1:] {
			switch a {
			case "--scope", "--wait", "--pty", "-t", "--pipe", "-P":
				return
			}
		}
	case "at", "batch":
		r.undecidable(idx, "%s runs commands read from its input at a later time", base)
	}
	for _, o := range opts {
		if o == "" || contains(c.Argv[1:], o) {
			c.Background = true
			return
		}
	}
}

// makeProgram marks what lets a command line, rather than the repository's
// makefiles, choose what make runs: makefile text given with --eval, a
// makefile read from standard input, and the shell recipes run with.
func (r *reader) makeProgram(idx int) {
	c := &r.out[idx]
	argv := c.Argv
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		name, val, has := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "--":
			continue
		case strings.HasPrefix(a, "--") && len(name) >= 2 && strings.HasPrefix("eval", name), a == "-E" || strings.HasPrefix(a, "-E") && !strings.HasPrefix(a, "--"):
			r.undecidable(idx, "make --eval runs makefile text given on the command line")
			return
		case a == "-f" || strings.HasPrefix(a, "--") && len(name) >= 2 && (strings.HasPrefix("file", name) || strings.HasPrefix("makefile", name)):
			if !has && i+1 < len(argv) {
				i++
				val = argv[i]
			}
			if val == "-" || val == "/dev/stdin" || isDynamic(c, i) {
				r.undecidable(idx, "make reads a makefile only known at run time")
				return
			}
		case strings.HasPrefix(a, "-f") && !strings.HasPrefix(a, "--"):
			if v := a[2:]; v == "-" || v == "/dev/stdin" {
				r.undecidable(idx, "make reads a makefile only known at run time")
				return
			}
		case !strings.HasPrefix(a, "-") && strings.Contains(a, "="):
			switch k, _, _ := strings.Cut(a, "="); strings.TrimRight(k, ":+?!") {
			case "SHELL", ".SHELLFLAGS", "MAKESHELL", "MAKEFILES":
				r.undecidable(idx, "make %s chooses what runs the recipes", k)
				return
			}
		}
	}
}

// opaqueRunners run commands that cannot be found from their command line:
// GNU parallel and sem build them from their input and ::: lists, bwrap's
// options take one to three values each, start-stop-daemon names its
// program in any of several options.
var opaqueRunners = map[string]string{
	"parallel":          "GNU parallel builds the commands it runs from its input and argument lists",
	"sem":               "GNU parallel builds the commands it runs from its input and argument lists",
	"bwrap":             "the program bwrap runs cannot be found reliably among its options",
	"start-stop-daemon": "the program start-stop-daemon runs cannot be found reliably among its options",
}
