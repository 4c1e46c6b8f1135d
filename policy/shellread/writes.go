package shellread

import (
	"path"
	"strings"
)

// Programs that write or remove the files named in their arguments. A shell
// redirection is not the only way to reach a file: `tee airlock.yaml`,
// `cp x .git/hooks/pre-commit`, `dd of=F`, `ln -s`, `install`, `rm F` and
// `sed -i` do the same. fileWrites lists those files as Redirects with Arg
// set, so a policy can hold them to the same protections as a `>`.

// writeSpec says how a program's arguments are parsed: which short options
// take a value (in the same word or the next) and which long options do.
type writeSpec struct {
	valued string
	long   []string
	// optional are long options whose value may only follow an "=".
	optional []string
	// attached are short options whose value is optional and may only be
	// the rest of the same word (sed -i[SUFFIX]).
	attached string
}

var writeSpecs = map[string]writeSpec{
	"tee":      {optional: []string{"output-error"}},
	"cp":       {valued: "St", long: []string{"suffix", "target-directory"}, optional: []string{"backup", "preserve", "no-preserve", "reflink", "sparse", "update", "context"}},
	"mv":       {valued: "St", long: []string{"suffix", "target-directory"}, optional: []string{"backup", "update", "context"}},
	"ln":       {valued: "St", long: []string{"suffix", "target-directory"}, optional: []string{"backup"}},
	"install":  {valued: "gmoStZ", long: []string{"group", "mode", "owner", "suffix", "target-directory", "strip-program"}, optional: []string{"backup", "context"}},
	"rm":       {optional: []string{"interactive", "one-file-system", "preserve-root"}},
	"rmdir":    {},
	"unlink":   {},
	"shred":    {valued: "ns", long: []string{"iterations", "size", "random-source"}},
	"truncate": {valued: "rs", long: []string{"reference", "size"}},
	"touch":    {valued: "drt", long: []string{"date", "reference"}, optional: []string{"time"}},
	"mkdir":    {valued: "m", long: []string{"mode"}, optional: []string{"context"}},
	"mkfifo":   {valued: "m", long: []string{"mode"}, optional: []string{"context"}},
	"chmod":    {optional: []string{"reference"}},
	"chown":    {optional: []string{"reference", "from"}},
	"chgrp":    {optional: []string{"reference"}},
	"sed":      sedWrites,
	"gsed":     sedWrites,
	"sort":     {valued: "koStT", long: []string{"key", "output", "buffer-size", "field-separator", "temporary-directory", "files0-from", "batch-size", "parallel", "compress-program", "random-source"}, optional: []string{"sort"}},
	"rsync": {valued: "efBTM", long: []string{"rsh", "filter", "exclude", "include", "exclude-from", "include-from", "files-from",
		"backup-dir", "suffix", "temp-dir", "partial-dir", "compare-dest", "copy-dest", "link-dest", "rsync-path", "log-file",
		"log-file-format", "password-file", "out-format", "chmod", "chown", "usermap", "groupmap", "timeout", "contimeout",
		"port", "sockopts", "protocol", "iconv", "bwlimit", "max-size", "min-size", "max-delete", "modify-window", "remote-option",
		"info", "debug", "skip-compress", "read-batch", "write-batch", "only-write-batch", "block-size", "checksum-choice", "compress-choice"},
		optional: []string{"compress-level", "outbuf"}},
	"uniq": {valued: "fsw", long: []string{"skip-fields", "skip-chars", "check-chars"}, optional: []string{"all-repeated", "group"}},
}

var sedWrites = writeSpec{valued: "efl", long: []string{"expression", "file", "line-length"}, optional: []string{"in-place"}, attached: "i"}

// Writes reports whether prog (decided on its base name) writes or removes
// files named in its arguments, so ReadArgv lists them.
func Writes(prog string) bool {
	base := baseName(prog)
	_, ok := writeSpecs[base]
	return ok || base == "dd" || base == "git" || base == "find" || base == "curl" || base == "wget"
}

// argIndex finds the argv index of a value Canon moved (an option's value),
// preferring a word only known at run time, so its Dynamic mark is kept;
// -1 when it is part of a word.
func argIndex(c *Command, v string) int {
	at := -1
	for i, a := range c.Argv {
		if a == v || strings.HasSuffix(a, "="+v) || len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, v) {
			if isDynamic(c, i) {
				return i
			}
			if at < 0 {
				at = i
			}
		}
	}
	return at
}

// argWord is one word of a command line and its index in Argv.
type argWord struct {
	val string
	at  int
}

// parsedArgs are a command line split into options (with their values) and
// operands, GNU style: options may follow operands until "--".
type parsedArgs struct {
	opts []argOpt
	ops  []argWord
}

type argOpt struct {
	name string // "-t" or "--target-directory" (a long prefix is expanded)
	val  string
	at   int // index of the value in Argv (-1 without one)
}

func (p parsedArgs) opt(names ...string) []argOpt {
	var out []argOpt
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				out = append(out, o)
			}
		}
	}
	return out
}

func (p parsedArgs) has(names ...string) bool { return len(p.opt(names...)) > 0 }

func parseArgs(argv []string, sp writeSpec) parsedArgs {
	var p parsedArgs
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			for _, b := range argv[i+1:] {
				i++
				p.ops = append(p.ops, argWord{b, i})
			}
			return p
		case strings.HasPrefix(a, "--"):
			name, val, has := strings.Cut(a[2:], "=")
			full, valued := writeLong(sp, name)
			o := argOpt{name: "--" + full, at: -1}
			switch {
			case has:
				o.val, o.at = val, i
			case valued && i+1 < len(argv):
				i++
				o.val, o.at = argv[i], i
			}
			p.opts = append(p.opts, o)
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				o := argOpt{name: "-" + a[k:k+1], at: -1}
				if strings.IndexByte(sp.valued, a[k]) >= 0 {
					if k+1 < len(a) {
						o.val, o.at = a[k+1:], i
					} else if i+1 < len(argv) {
						i++
						o.val, o.at = argv[i], i
					}
					p.opts = append(p.opts, o)
					break
				}
				p.opts = append(p.opts, o)
				if strings.IndexByte(sp.attached, a[k]) >= 0 {
					break // sed -i[SUFFIX]: the rest of the word is the value
				}
			}
		default:
			p.ops = append(p.ops, argWord{a, i})
		}
	}
	return p
}

// writeLong expands a GNU long-option prefix against the options of sp that
// take a value; an unknown name is kept as written.
func writeLong(sp writeSpec, name string) (string, bool) {
	for _, l := range sp.long {
		if l == name {
			return l, true
		}
	}
	for _, l := range sp.optional {
		if l == name {
			return l, false
		}
	}
	if name == "" {
		return name, false
	}
	for _, l := range sp.long {
		if strings.HasPrefix(l, name) {
			return l, true
		}
	}
	for _, l := range sp.optional {
		if strings.HasPrefix(l, name) {
			return l, false
		}
	}
	return name, false
}

// fileWrites lists, as Redirects with Arg set, the files the command at idx
// writes ("write"), removes ("remove") or links to ("link") through its own
// arguments.
func (r *reader) fileWrites(idx int, base string) {
	c := &r.out[idx]
	var ws []Redirect
	add := func(op string, w argWord) {
		if w.val == "" || w.val == "-" && op == "write" && base == "tee" {
			return
		}
		ws = append(ws, argRedirect(c, op, w))
	}
	addUnder := func(target argWord, srcs []argWord) {
		// cp SRC DIR writes DIR/base(SRC); whether DIR is a directory is
		// only known at run time, so both are listed.
		add("write", target)
		if isDynamic(c, target.at) {
			return
		}
		for _, s := range srcs {
			if isDynamic(c, s.at) {
				ws = append(ws, Redirect{Op: "write", Path: target.val + "/" + s.val, Write: true, Arg: true, Dynamic: true})
				continue
			}
			b := path.Base(strings.TrimRight(s.val, "/"))
			if b != "/" && b != "." && b != ".." {
				add("write", argWord{strings.TrimRight(target.val, "/") + "/" + b, target.at})
			}
		}
	}
	switch base {
	case "dd":
		for i, a := range c.Argv[1:] {
			if v, ok := strings.CutPrefix(a, "of="); ok {
				add("write", argWord{v, i + 1})
			}
		}
	case "git":
		r.gitWrites(idx, add, func(rd Redirect) { ws = append(ws, rd) })
	case "curl", "wget":
		// Their option tables are Canon's: -o=FILE (curl's output, wget's
		// log), -O=FILE (wget), --output-dir=DIR, -P=DIR, -a=FILE.
		for _, a := range Canon(base, c.Argv[1:]) {
			for _, o := range []string{"-o=", "-O=", "--output-dir=", "-P=", "-a=", "--output-document=", "--directory-prefix="} {
				if v, ok := strings.CutPrefix(a, o); ok && v != "-" && v != "" {
					add("write", argWord{v, argIndex(c, v)})
				}
			}
		}
	case "find":
		// find -delete removes what it finds below its starting points
		// (`find . -delete` takes the policy file with it).
		if !contains(c.Argv[1:], "-delete") || !findMayDelete(c) {
			return
		}
		i := 1
		for i < len(c.Argv) && (c.Argv[i] == "-H" || c.Argv[i] == "-L" || c.Argv[i] == "-P" ||
			strings.HasPrefix(c.Argv[i], "-D") || strings.HasPrefix(c.Argv[i], "-O") || c.Argv[i] == "--") {
			i++
		}
		for ; i < len(c.Argv); i++ {
			a := c.Argv[i]
			if strings.HasPrefix(a, "-") || a == "(" || a == "!" {
				break
			}
			add("remove", argWord{a, i})
		}
	default:
		sp, ok := writeSpecs[base]
		if !ok {
			return
		}
		p := parseArgs(c.Argv, sp)
		switch base {
		case "tee", "touch", "truncate", "mkdir", "mkfifo":
			for _, w := range p.ops {
				add("write", w)
			}
		case "rm", "rmdir", "unlink", "shred":
			for _, w := range p.ops {
				add("remove", w)
			}
		case "chmod", "chown", "chgrp":
			ops := p.ops
			if !p.has("--reference") && len(ops) > 0 {
				ops = ops[1:] // the mode or the owner
			}
			for _, w := range ops {
				add("write", w)
			}
		case "cp", "ln", "install", "mv":
			srcs := p.ops
			if base == "mv" {
				for _, w := range p.ops {
					add("remove", w)
				}
			}
			if base == "ln" || base == "cp" && p.has("-l", "-s", "--link", "--symbolic-link") {
				// A link to a protected file is a way to write it later
				// under another name (`ln -s airlock.yaml x && echo > x`):
				// the files linked to are listed as "link".
				ts := p.ops
				var linkDirs []string // where a relative symbolic link's target is read from
				if t := p.opt("-t", "--target-directory"); len(t) > 0 {
					linkDirs = []string{t[0].val}
				} else if len(ts) >= 2 {
					last := ts[len(ts)-1].val
					linkDirs = []string{path.Dir(last), last} // LINK, or DIR/base(TARGET)
					ts = ts[:len(ts)-1]
				}
				symbolic := p.has("-s", "--symbolic", "--symbolic-link")
				for _, w := range ts {
					add("link", w)
					if !symbolic || strings.HasPrefix(w.val, "/") || isDynamic(c, w.at) {
						continue
					}
					for _, d := range linkDirs {
						if d != "." && d != "" {
							add("link", argWord{d + "/" + w.val, w.at})
						}
					}
				}
			}
			switch {
			case p.has("-t", "--target-directory"):
				for _, t := range p.opt("-t", "--target-directory") {
					addUnder(argWord{t.val, t.at}, srcs)
				}
			case base == "install" && p.has("-d", "--directory"):
				for _, w := range p.ops {
					add("write", w)
				}
			case len(p.ops) >= 2:
				addUnder(p.ops[len(p.ops)-1], p.ops[:len(p.ops)-1])
			case len(p.ops) == 1 && base == "ln":
				// ln TARGET makes a link named after it here.
				if !isDynamic(c, p.ops[0].at) {
					add("write", argWord{path.Base(p.ops[0].val), p.ops[0].at})
				} else {
					add("write", p.ops[0])
				}
			}
		case "sed", "gsed":
			if !p.has("-i", "--in-place") {
				return
			}
			files := p.ops
			if !p.has("-e", "--expression", "-f", "--file") && len(files) > 0 {
				files = files[1:] // the script
			}
			for _, w := range files {
				add("write", w)
			}
		case "sort":
			for _, o := range p.opt("-o", "--output") {
				add("write", argWord{o.val, o.at})
			}
		case "uniq":
			if len(p.ops) >= 2 {
				add("write", p.ops[1])
			}
		case "rsync":
			for _, o := range p.opt("--log-file", "--write-batch", "--only-write-batch") {
				add("write", argWord{o.val, o.at})
			}
			// A target HOST:PATH or rsync:// is on another machine.
			if n := len(p.ops); n >= 2 && !remotePath(p.ops[n-1].val) {
				addUnder(p.ops[n-1], p.ops[:n-1])
			}
		}
	}
	if len(ws) > 0 {
		c.Redirects = append(append([]Redirect(nil), c.Redirects...), ws...)
	}
}

// argRedirect makes a file argument into a Redirect: a word only known at
// run time is Dynamic unless it is a plain glob, which is kept as a
// pattern (Glob) so a policy can tell whether it may name a protected file.
func argRedirect(c *Command, op string, w argWord) Redirect {
	rd := Redirect{Op: op, Path: w.val, Write: true, Arg: true}
	if w.at >= 0 && isDynamic(c, w.at) {
		if plainGlob(w.val) {
			rd.Glob = true
		} else {
			rd.Dynamic = true
		}
	}
	return rd
}

// plainGlob reports whether a raw word holds only literal characters and
// the glob characters * ? [ ]: no quotes, escapes, expansions or braces.
func plainGlob(raw string) bool {
	return strings.ContainsAny(raw, "*?[") && !strings.ContainsAny(raw, "$`'\"\\{}~()<>|&; \t\n!@+")
}

// gitWrites lists the files git's --output and format-patch's -o write,
// and the pathspecs checkout, restore, rm and mv rewrite or remove in the
// working tree (`git checkout OLD -- airlock.yaml` brings back an older
// policy; a directory pathspec takes everything below it, so they are
// listed as "remove", which holds an ancestor of the policy file too).
func (r *reader) gitWrites(idx int, add func(string, argWord), addR func(Redirect)) {
	c := &r.out[idx]
	argv := c.Argv
	if gitConfigWrite(argv) {
		// git writes the repository's config (git config NAME VALUE, git
		// remote add, …): a file git on the host trusts, which the box
		// holds read-only; decided as a write of it, so the answer is a
		// refusal that names it rather than the box's "Device or resource
		// busy" (git renames its lock file onto a mount point).
		addR(Redirect{Op: "write", Path: ".git/config", Write: true, Arg: true})
	}
	sub := ""
	pathspec := func(a string, i int) {
		switch sub {
		case "checkout", "restore", "rm", "mv":
		default:
			return
		}
		if strings.ContainsAny(a, "*?[") && !isDynamic(c, i) && !strings.HasPrefix(a, ":") {
			// git matches pathspecs as globs itself.
			addR(Redirect{Op: "remove", Path: a, Write: true, Arg: true, Glob: true})
			return
		}
		if strings.HasPrefix(a, ":") && !isDynamic(c, i) {
			// pathspec magic (:(glob), :!x, :/): not followed.
			addR(Redirect{Op: "remove", Path: a, Write: true, Arg: true, Dynamic: true})
			return
		}
		add("remove", argWord{a, i})
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			for k := i + 1; k < len(argv); k++ {
				pathspec(argv[k], k)
			}
			return
		}
		if v, ok := strings.CutPrefix(a, "--output="); ok {
			add("write", argWord{v, i})
			continue
		}
		if v, ok := strings.CutPrefix(a, "--output-directory="); ok {
			add("write", argWord{v, i})
			continue
		}
		if (a == "--output" || a == "--output-directory" || a == "-o" && sub == "format-patch") && i+1 < len(argv) {
			add("write", argWord{argv[i+1], i + 1})
			i++
			continue
		}
		if sub == "" && (a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace") {
			i++
			continue
		}
		if sub == "" && !strings.HasPrefix(a, "-") {
			sub = a
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		pathspec(a, i)
	}
}

// findMayDelete reports whether a find -delete may remove a protected file
// (the policy file, a repository's metadata or configuration). A find
// whose -name/-iname tests cannot match one of those names does not: the
// common `find . -name '*.o' -delete` is left alone. Other tests (-path,
// -regex) cannot be followed, so they count as "may".
func findMayDelete(c *Command) bool {
	named := false
	for i := 1; i < len(c.Argv); i++ {
		switch c.Argv[i] {
		case "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex":
			return true
		case "-name", "-iname":
			if i+1 >= len(c.Argv) || isDynamic(c, i+1) {
				return true
			}
			named = true
			p := c.Argv[i+1]
			for _, n := range []string{"airlock.yaml", ".git", "config", "hooks", "pre-commit"} {
				if m, err := path.Match(p, n); err != nil || m {
					return true
				}
				if c.Argv[i] == "-iname" {
					if m, _ := path.Match(strings.ToLower(p), n); m {
						return true
					}
				}
			}
			i++
		}
	}
	return !named
}

// remotePath reports whether an rsync or scp operand names another machine:
// HOST:PATH (a colon before any slash) or a URL.
func remotePath(p string) bool {
	if strings.Contains(p, "://") {
		return true
	}
	colon, slash := strings.IndexByte(p, ':'), strings.IndexByte(p, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// gitConfigWrite reports whether a git command line changes the
// repository's own config file: `git config` with a value or a changing
// option (or the set/unset/… subcommands), `git remote` add, rename,
// remove, set-url, set-head, set-branches, and `git branch` options that
// record upstreams or descriptions. --global, --system and --file F write
// elsewhere (the box's private HOME, the read-only /etc, F decided as
// its own write) and are left out.
func gitConfigWrite(argv []string) bool {
	sub, rest := gitSub(argv)
	switch sub {
	case "config":
		var pos []string
		for i := 0; i < len(rest); i++ {
			switch a := rest[i]; {
			case a == "--global" || a == "--system" || a == "--file" || a == "-f" || strings.HasPrefix(a, "--file="):
				return false
			case a == "--add" || a == "--unset" || a == "--unset-all" || a == "--replace-all" ||
				a == "--rename-section" || a == "--remove-section" || a == "-e" || a == "--edit":
				return true
			case a == "--get" || a == "--get-all" || a == "--get-regexp" || a == "--get-urlmatch" ||
				a == "-l" || a == "--list" || a == "--get-color" || a == "--get-colorbool":
				return false
			case strings.HasPrefix(a, "-"):
			default:
				pos = append(pos, a)
			}
		}
		if len(pos) > 0 {
			switch pos[0] {
			case "set", "unset", "rename-section", "remove-section", "edit":
				return true
			case "get", "list":
				return false
			}
		}
		return len(pos) >= 2 // NAME VALUE
	case "remote":
		for _, a := range rest {
			if strings.HasPrefix(a, "-") {
				continue
			}
			switch a {
			case "add", "rename", "remove", "rm", "set-url", "set-head", "set-branches":
				return true
			}
			return false
		}
	case "branch":
		for _, a := range rest {
			if a == "-u" || a == "--unset-upstream" || a == "--edit-description" ||
				strings.HasPrefix(a, "--set-upstream-to") || strings.HasPrefix(a, "--set-upstream") {
				return true
			}
		}
	}
	return false
}

// gitSub is git's subcommand and the words after it, past the global
// options (those of -C, -c, --git-dir, --work-tree, --namespace take a
// value).
func gitSub(argv []string) (string, []string) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a, argv[i+1:]
		}
	}
	return "", nil
}
