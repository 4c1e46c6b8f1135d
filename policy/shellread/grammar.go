package shellread

import (
	"strings"
	"sync"
)

// One option grammar for the programs whose options run code. A program's
// options are declared once, as getopt and git's option parser read them —
// short clusters (`-qfx CMD`), attached and separate values (`-u'CMD'`,
// `-u CMD`), `--long=value`, `--long value`, unambiguous abbreviations
// (`--use-compress`), `--` — and what each option does is declared next to
// it. A spelling cannot slip past a hand-written loop because there is none.

// optDoes is what an option does besides shaping output.
type optDoes uint8

const (
	optPlain   optDoes = iota
	optScript          // its value is a command run through a shell
	optProgram         // its value names a program run with arguments of its own
	optUnknown         // it makes the program run code this reader cannot see
	optArgv            // the words after it, up to ";", are a program and its arguments (fd -x)
)

// optDef is one option: its short letter (0 when none), its long name (""
// when none), whether it takes a value, and what it does.
type optDef struct {
	short byte
	long  string
	value byte // 0: none; 'r': required; 'o': optional, attached only
	does  optDoes
	// prefix, when set, is the start (case-folded) a value must have to run
	// code (tar --checkpoint-action=exec=…, ssh -o ProxyCommand=…), which
	// is removed.
	prefix []string
	why    string // for optUnknown
}

// grammar is the option grammar of one program.
type grammar struct {
	opts []optDef
	// tar: a first word without a dash is a cluster of letters whose
	// values are the next words in order (`tar cIf CMD out.tar`).
	oldStyle bool
	// dash are options of several letters after one dash (zip's -TT),
	// matched before a word is read as a cluster.
	dash []optDef
}

// optHit is one option found on a command line.
type optHit struct {
	def   *optDef
	value string
	has   bool
	at    int // index of the word holding the value (or the option)
}

// scan reads argv[from:] by g, calling hit for every option (in order) and
// operand for every operand; it stops at the first word only known at run
// time where an option may stand and returns its index (or -1).
func (g *grammar) scan(argv []string, from int, dynamic func(int) bool, hit func(optHit), operand func(int)) int {
	i := from
	if g.oldStyle && i < len(argv) && argv[i] != "" && argv[i][0] != '-' {
		if dynamic(i) {
			return i
		}
		word := argv[i]
		i++
		for k := 0; k < len(word); k++ {
			d := g.short(word[k])
			if d == nil || d.value == 0 {
				if d != nil {
					hit(optHit{def: d, at: i - 1})
				}
				continue
			}
			h := optHit{def: d, at: i}
			if i < len(argv) {
				h.value, h.has = argv[i], true
				i++
			}
			hit(h)
		}
	}
	for ; i < len(argv); i++ {
		a := argv[i]
		if dynamic(i) && mayStartWithDash(a) {
			return i
		}
		switch {
		case a == "--":
			for k := i + 1; k < len(argv); k++ {
				operand(k)
			}
			return -1
		case strings.HasPrefix(a, "--"):
			name, val, has := strings.Cut(a[2:], "=")
			d := g.long(name)
			if d == nil {
				continue // unknown or ambiguous: the program refuses it or takes a flag
			}
			h := optHit{def: d, value: val, has: has, at: i}
			if d.value == 'r' && !has && i+1 < len(argv) {
				i++
				h.value, h.has, h.at = argv[i], true, i
			}
			hit(h)
		case len(a) > 1 && a[0] == '-' && g.dashOpt(a) != nil:
			d := g.dashOpt(a)
			h := optHit{def: d, at: i}
			if rest := a[1+len(d.long):]; rest != "" {
				h.value, h.has = rest, true
			} else if d.value == 'r' && i+1 < len(argv) {
				i++
				h.value, h.has, h.at = argv[i], true, i
			}
			hit(h)
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				d := g.short(a[k])
				if d == nil {
					continue // an option this table does not know: a flag
				}
				if d.value == 0 {
					hit(optHit{def: d, at: i})
					continue
				}
				h := optHit{def: d, at: i}
				switch {
				case k+1 < len(a):
					h.value, h.has = a[k+1:], true
				case d.value == 'r' && i+1 < len(argv):
					i++
					h.value, h.has, h.at = argv[i], true, i
				}
				hit(h)
				k = len(a) // the rest of the word was the value
			}
		default:
			operand(i)
		}
	}
	return -1
}

func (g *grammar) dashOpt(a string) *optDef {
	for k := range g.dash {
		if strings.HasPrefix(a[1:], g.dash[k].long) {
			return &g.dash[k]
		}
	}
	return nil
}

func (g *grammar) short(ch byte) *optDef {
	for k := range g.opts {
		if g.opts[k].short == ch {
			return &g.opts[k]
		}
	}
	return nil
}

// long resolves a long option name as getopt_long does: the exact name, or
// the one name it abbreviates; nil when none or several.
func (g *grammar) long(name string) *optDef {
	if name == "" {
		return nil
	}
	var found *optDef
	for k := range g.opts {
		l := g.opts[k].long
		if l == "" {
			continue
		}
		if l == name {
			return &g.opts[k]
		}
		if strings.HasPrefix(l, name) {
			if found != nil {
				return nil
			}
			found = &g.opts[k]
		}
	}
	return found
}

var sshCmdKeys = []string{"proxycommand", "localcommand", "knownhostscommand", "remotecommand"}

// grammars holds the programs whose options run code. Options that take a
// value are listed even when harmless, so that their value is never read
// as a cluster of options (and the other way round).
// grammars is built on first use (see canonSpecs).
var grammars = sync.OnceValue(func() map[string]*grammar {
	g := map[string]*grammar{
		"tar": {oldStyle: true, opts: []optDef{
			{short: 'I', long: "use-compress-program", value: 'r', does: optScript},
			{long: "to-command", value: 'r', does: optScript},
			{long: "checkpoint-action", value: 'r', does: optScript, prefix: []string{"exec="}},
			{short: 'F', long: "info-script", value: 'r', does: optScript},
			{long: "new-volume-script", value: 'r', does: optScript},
			{long: "rmt-command", value: 'r', does: optProgram},
			{long: "rsh-command", value: 'r', does: optProgram},
			{short: 'f', long: "file", value: 'r'}, {short: 'C', long: "directory", value: 'r'},
			{short: 'T', long: "files-from", value: 'r'}, {short: 'X', long: "exclude-from", value: 'r'},
			{short: 'b', long: "blocking-factor", value: 'r'}, {short: 'H', long: "format", value: 'r'},
			{short: 'K', long: "starting-file", value: 'r'}, {short: 'L', long: "tape-length", value: 'r'},
			{short: 'N', long: "newer", value: 'r'}, {short: 'V', long: "label", value: 'r'},
			{short: 'g', long: "listed-incremental", value: 'r'}, {short: 'c', long: "create"}, {short: 'x', long: "extract"},
			{short: 't', long: "list"}, {short: 'v', long: "verbose"}, {short: 'z', long: "gzip"}, {short: 'j', long: "bzip2"},
			{short: 'J', long: "xz"}, {short: 'r', long: "append"}, {short: 'u', long: "update"},
			{long: "checkpoint", value: 'o'}, {long: "remove-files"}, {long: "exclude", value: 'r'},
			{long: "owner", value: 'r'}, {long: "group", value: 'r'}, {long: "mode", value: 'r'}, {long: "transform", value: 'r'},
		}},
		"zip": {dash: []optDef{{long: "TT", value: 'r', does: optScript}}, opts: []optDef{
			{short: 0, long: "unzip-command", value: 'r', does: optScript},
			{short: 'b', long: "temp-path", value: 'r'}, {short: 'n', long: "suffixes", value: 'r'},
			{short: 't', long: "from-date", value: 'r'}, {short: 'x', long: "exclude", value: 'r'},
			{short: 'i', long: "include", value: 'r'}, {short: 'P', long: "password", value: 'r'},
			{short: 'Z', long: "compression-method", value: 'r'}, {short: 's', long: "split-size", value: 'r'},
			{short: 'O', long: "output-file", value: 'r'}, {short: 'm', long: "move"}, {short: 'T', long: "test"},
			{short: 'q', long: "quiet"}, {short: 'r', long: "recurse-paths"},
		}},
		"ssh": {opts: []optDef{
			{short: 'o', value: 'r', does: optScript, prefix: sshCmdKeys},
			{short: 'F', value: 'r', does: optUnknown, why: "ssh -F reads a configuration file whose commands are only known at run time"},
			{short: 'b', value: 'r'}, {short: 'c', value: 'r'}, {short: 'D', value: 'r'}, {short: 'E', value: 'r'},
			{short: 'e', value: 'r'}, {short: 'I', value: 'r'}, {short: 'i', value: 'r'}, {short: 'J', value: 'r'},
			{short: 'L', value: 'r'}, {short: 'l', value: 'r'}, {short: 'm', value: 'r'}, {short: 'O', value: 'r'},
			{short: 'p', value: 'r'}, {short: 'Q', value: 'r'}, {short: 'R', value: 'r'}, {short: 'S', value: 'r'},
			{short: 'W', value: 'r'}, {short: 'w', value: 'r'}, {short: 'B', value: 'r'},
		}},
		"scp": {opts: []optDef{
			{short: 'S', value: 'r', does: optProgram},
			{short: 'o', value: 'r', does: optScript, prefix: sshCmdKeys},
			{short: 'F', value: 'r', does: optUnknown, why: "scp -F reads a configuration file whose commands are only known at run time"},
			{short: 'c', value: 'r'}, {short: 'D', value: 'r'}, {short: 'i', value: 'r'}, {short: 'J', value: 'r'},
			{short: 'l', value: 'r'}, {short: 'P', value: 'r'}, {short: 'X', value: 'r'},
		}},
		"rsync": {opts: []optDef{
			{short: 'e', long: "rsh", value: 'r', does: optScript},
			{long: "rsync-path", value: 'r'}, {short: 'f', long: "filter", value: 'r'}, {short: 'T', long: "temp-dir", value: 'r'},
			{long: "exclude", value: 'r'}, {long: "include", value: 'r'}, {short: 'B', long: "block-size", value: 'r'},
			{short: 'M', long: "remote-option", value: 'r'}, {long: "password-file", value: 'r'},
		}},
		"man": {opts: []optDef{
			{short: 'P', long: "pager", value: 'r', does: optScript},
			{short: 'H', long: "html", value: 'o', does: optScript},
			{short: 'C', long: "config-file", value: 'r', does: optUnknown, why: "man -C reads a configuration file that names programs"},
			{short: 'M', long: "manpath", value: 'r'}, {short: 'L', long: "locale", value: 'r'}, {short: 'S', long: "sections", value: 'r'},
			{short: 'm', long: "systems", value: 'r'}, {short: 'E', long: "encoding", value: 'r'}, {short: 'p', long: "preprocessor", value: 'r'},
			{short: 'R', long: "recode", value: 'r'}, {short: 'T', long: "troff-device", value: 'o'}, {short: 'X', long: "gxditview", value: 'o'},
			{short: 'r', long: "prompt", value: 'r'}, {short: 'e', long: "extension", value: 'r'},
		}},
		"fd": {opts: []optDef{
			{short: 'x', long: "exec", does: optArgv}, {short: 'X', long: "exec-batch", does: optArgv},
			{short: 'e', long: "extension", value: 'r'}, {short: 't', long: "type", value: 'r'}, {short: 'E', long: "exclude", value: 'r'},
			{short: 'd', long: "max-depth", value: 'r'}, {short: 'c', long: "color", value: 'r'}, {short: 'j', long: "threads", value: 'r'},
			{short: 'S', long: "size", value: 'r'}, {short: 'o', long: "owner", value: 'r'}, {long: "base-directory", value: 'r'},
			{long: "search-path", value: 'r'}, {long: "changed-within", value: 'r'}, {long: "changed-before", value: 'r'},
			{long: "ignore-file", value: 'r'}, {long: "batch-size", value: 'r'}, {long: "max-results", value: 'r'},
		}},
	}
	g["gtar"], g["bsdtar"] = g["tar"], g["tar"]
	g["sftp"] = g["scp"]
	g["fdfind"] = g["fd"]
	return g
})

// gitGrammars are the options of git subcommands that run code.
var gitGrammars = sync.OnceValue(func() map[string]*grammar {
	return map[string]*grammar{
		"rebase": {opts: []optDef{{short: 'x', long: "exec", value: 'r', does: optScript},
			{short: 's', long: "strategy", value: 'r'}, {short: 'X', long: "strategy-option", value: 'r'},
			{short: 'C', value: 'r'}, {long: "onto", value: 'r'}, {short: 'S', long: "gpg-sign", value: 'o'},
			{long: "whitespace", value: 'r'}, {long: "empty", value: 'r'}}},
		"difftool":  {opts: []optDef{{short: 'x', long: "extcmd", value: 'r', does: optScript}, {short: 't', long: "tool", value: 'r'}}},
		"mergetool": {opts: []optDef{{short: 'x', long: "extcmd", value: 'r', does: optScript}, {short: 't', long: "tool", value: 'r'}}},
		"clone": {opts: []optDef{{short: 'u', long: "upload-pack", value: 'r', does: optScript},
			{long: "template", value: 'r', does: optUnknown, why: "git clone --template copies hooks that run during the checkout"},
			{short: 'o', long: "origin", value: 'r'}, {short: 'b', long: "branch", value: 'r'}, {long: "reference", value: 'r'},
			{long: "depth", value: 'r'}, {short: 'j', long: "jobs", value: 'r'}, {long: "separate-git-dir", value: 'r'},
			{long: "filter", value: 'r'}, {long: "shallow-since", value: 'r'}, {long: "shallow-exclude", value: 'r'}}},
		"fetch": {opts: []optDef{{long: "upload-pack", value: 'r', does: optScript}, {long: "depth", value: 'r'},
			{short: 'j', long: "jobs", value: 'r'}, {short: 'o', long: "server-option", value: 'r'}}},
		"pull": {opts: []optDef{{long: "upload-pack", value: 'r', does: optScript}, {long: "depth", value: 'r'},
			{short: 's', long: "strategy", value: 'r'}, {short: 'X', long: "strategy-option", value: 'r'}}},
		"ls-remote": {opts: []optDef{{short: 'u', long: "upload-pack", value: 'r', does: optScript}, {short: 'o', long: "server-option", value: 'r'}}},
		"push": {opts: []optDef{{long: "receive-pack", value: 'r', does: optScript}, {long: "exec", value: 'r', does: optScript},
			{long: "repo", value: 'r'}, {short: 'o', long: "push-option", value: 'r'}, {long: "force-with-lease", value: 'o'},
			{long: "recurse-submodules", value: 'r'}, {long: "signed", value: 'o'}}},
		"send-pack": {opts: []optDef{{long: "receive-pack", value: 'r', does: optScript}, {long: "exec", value: 'r', does: optScript}}},
		"archive": {opts: []optDef{{long: "exec", value: 'r', does: optScript}, {short: 'o', long: "output", value: 'r'},
			{long: "remote", value: 'r'}, {long: "prefix", value: 'r'}, {long: "format", value: 'r'}}},
	}
})

// runGrammar reads the commands that the options of the command at idx run
// by g, with argv[from:] its options and operands.
func (r *reader) runGrammar(idx, from int, g *grammar, what string, s scope) {
	c := &r.out[idx]
	argv := append([]string(nil), c.Argv...)
	dyn := func(i int) bool { return isDynamic(&r.out[idx], i) }
	var hits []optHit
	bad := g.scan(argv, from, dyn, func(h optHit) { hits = append(hits, h) }, func(int) {})
	if bad >= 0 {
		r.undecidable(idx, "a word only known at run time among the options of %s", what)
		return
	}
	for _, h := range hits {
		d := h.def
		if d.does == optPlain {
			continue
		}
		name := d.long
		if name == "" {
			name = string(d.short)
		}
		switch d.does {
		case optUnknown:
			r.undecidable(idx, "%s", d.why)
			continue
		case optArgv:
			end := h.at + 1
			for end < len(argv) && argv[end] != ";" {
				end++
			}
			if h.at+1 < end {
				r.inner(idx, h.at+1, s, innerOpts{end: end, fromInput: true})
			}
			continue
		}
		val := h.value
		if !h.has {
			continue
		}
		if len(d.prefix) > 0 {
			v, ok := cutKey(val, d.prefix)
			if !ok {
				continue
			}
			val = v
		}
		if dyn(h.at) {
			r.undecidable(idx, "%s -%s runs a command only known at run time", what, name)
			return
		}
		if d.does == optScript {
			r.script(idx, val, s)
		} else {
			r.program1(idx, val, s)
		}
	}
}

// cutKey removes one of keys (case-folded, with "=" or blanks after a
// key of ssh's "Key=Value" / "Key Value" form) from the start of v.
func cutKey(v string, keys []string) (string, bool) {
	low := strings.ToLower(v)
	for _, k := range keys {
		if !strings.HasPrefix(low, k) {
			continue
		}
		rest := v[len(k):]
		if strings.HasSuffix(k, "=") {
			return rest, true
		}
		t := strings.TrimLeft(rest, " \t")
		if strings.HasPrefix(t, "=") {
			return t[1:], true
		}
		if len(t) < len(rest) {
			return t, true
		}
	}
	return "", false
}

// grammarRuns reports, without allocating, whether argv[from:] holds an
// option of g that runs code, names a program, or makes the program run
// what this reader cannot see.
func grammarRuns(g *grammar, argv []string, from int) bool {
	found := false
	g.scan(argv, from, func(int) bool { return false }, func(h optHit) {
		if h.def.does != optPlain {
			found = true
		}
	}, func(int) {})
	return found
}

// OptionsRun reports, for a program whose options this package reads by
// one grammar (tar, zip, ssh, scp, sftp, rsync, man, fd), whether args
// (without argv[0]) hold an option that runs code, names a program, or
// makes the program run code that cannot be seen; known is false for any
// other program. It does not allocate.
func OptionsRun(prog string, args []string) (runs, known bool) {
	g, ok := grammars()[prog]
	if !ok {
		return false, false
	}
	return grammarRuns(g, args, 0), true
}

// mayStartWithDash reports whether a word only known at run time (raw
// source text) may expand to one that begins with "-", and so be an
// option: its first character after any opening quotes is a dash, an
// expansion ($, `), an escape, a glob or a brace, or there is none. A
// word like "https://$HOST/x" begins with a literal "h" whatever $HOST
// holds, so it is an operand.
func mayStartWithDash(raw string) bool {
	for _, c := range []byte(raw) {
		switch c {
		case '"', '\'':
			continue // an opening quote: the next character decides
		case '-', '$', '`', '\\', '*', '?', '[', '{':
			return true
		}
		return false
	}
	return true
}
