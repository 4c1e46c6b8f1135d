package shellread

import "strings"

// A run-time word in the arguments of a program that takes commands from
// its options can itself be such an option: `find "$d"` with d=-delete,
// `git push origin $ref` with ref='--receive-pack=sh', `tar $opts` with a
// --to-command in it. Such a command is undecidable unless the word cannot
// start with "-" and cannot split into several words, or it is the value of
// an option that takes one, or it follows "--".

// mayBeOption reports, from its raw text, whether a dynamic word may expand
// to something starting with "-" or to several words.
func mayBeOption(raw string) bool {
	if splits(raw) {
		return true
	}
	t := raw
	for t != "" && (t[0] == '"') {
		t = t[1:]
	}
	if t == "" {
		return false
	}
	switch t[0] {
	case '$', '`', '*', '?', '[', '{', '-', '@', '+', '!':
		// An expansion or glob first; "-" and extended globs too.
		return !(t[0] == '$' && len(t) > 1 && t[1] == '\'' && !strings.HasPrefix(t[2:], "-") && !strings.HasPrefix(t[2:], "\\x2d"))
	case '\'':
		return strings.HasPrefix(t[1:], "-")
	case '\\':
		return strings.HasPrefix(t[1:], "-")
	}
	return false
}

// splits reports whether raw has an expansion or glob outside quotes, so
// that it may become several words (or none).
func splits(raw string) bool {
	sq, dq := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case sq:
			if c == '\'' {
				sq = false
			}
		case c == '\\':
			i++
		case c == '\'' && !dq:
			sq = true
		case c == '"':
			dq = !dq
		case dq:
		case c == '$':
			if i+1 < len(raw) && (raw[i+1] == '\'' || raw[i+1] == '"') {
				continue // $'…' and $"…" are quotes
			}
			return true
		case c == '`', c == '*', c == '?', c == '[':
			return true
		case c == '{' && strings.ContainsAny(raw[i:], ",."):
			return true
		}
	}
	return false
}

// findValued are find's primaries that take a value (the next word).
var findValued = map[string]bool{
	"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true, "-iwholename": true,
	"-regex": true, "-iregex": true, "-lname": true, "-ilname": true, "-newer": true, "-anewer": true,
	"-cnewer": true, "-type": true, "-xtype": true, "-maxdepth": true, "-mindepth": true, "-size": true,
	"-mtime": true, "-mmin": true, "-atime": true, "-amin": true, "-ctime": true, "-cmin": true,
	"-user": true, "-group": true, "-uid": true, "-gid": true, "-perm": true, "-links": true, "-inum": true,
	"-samefile": true, "-used": true, "-printf": true, "-context": true, "-fstype": true, "-regextype": true,
	"-fprint": true, "-fprint0": true, "-fls": true, "-fprintf": true,
}

// gitExecSubs are the git subcommands whose options can name a command.
var gitExecSubs = map[string]bool{
	"clone": true, "fetch": true, "pull": true, "ls-remote": true, "push": true, "archive": true,
	"rebase": true, "bisect": true, "submodule": true, "difftool": true, "mergetool": true,
	"filter-branch": true, "config": true, "remote": true,
}

// argExec are the programs whose arguments may name a command, checked by
// optionWords.
var argExec = map[string]bool{
	"find": true, "fd": true, "fdfind": true, "git": true, "tar": true, "rg": true, "rsync": true,
	"ssh": true, "scp": true, "sftp": true, "sort": true, "man": true, "zip": true,
}

// optionWords makes the command undecidable when a run-time word may be an
// option that runs a command.
func (r *reader) optionWords(idx int, base string) {
	c := &r.out[idx]
	if len(c.Dynamic) == 0 || !argExec[base] {
		return
	}
	argv := c.Argv
	var sp *canonSpec
	from := 1
	if base == "git" {
		sp = canonSpecs()["git"]
		// Before the subcommand every word matters; after it only for
		// subcommands that can run something.
		sub := gitSubIndex(c)
		if sub > 0 && !isDynamic(c, sub) {
			if !gitExecSubs[argv[sub]] {
				r.checkOptionWords(idx, 1, sub, sp)
				return
			}
			if s := sp.subs[argv[sub]]; s != nil {
				r.checkOptionWords(idx, 1, sub, sp)
				r.checkOptionWords(idx, sub+1, len(argv), s)
				return
			}
		}
	} else {
		sp = canonSpecs()[base]
	}
	r.checkOptionWords(idx, from, len(argv), sp)
}

func (r *reader) checkOptionWords(idx, from, to int, sp *canonSpec) {
	c := &r.out[idx]
	argv := c.Argv
	base := baseName(argv[0])
	for i := from; i < to; i++ {
		if argv[i] == "--" && !isDynamic(c, i) {
			if base != "find" {
				return
			}
			continue
		}
		if !isDynamic(c, i) || !mayBeOption(argv[i]) {
			continue
		}
		if i > from && !isDynamic(c, i-1) && takesValue(base, sp, argv[i-1]) {
			continue
		}
		r.undecidable(idx, "a word only known at run time (%s) could be an option that makes %s run a command", argv[i], base)
		return
	}
}

// takesValue reports whether option opt (a whole word) takes the next word
// as its value.
func takesValue(base string, sp *canonSpec, opt string) bool {
	if base == "find" || base == "fd" || base == "fdfind" {
		return findValued[opt]
	}
	if sp == nil || len(opt) < 2 || opt[0] != '-' {
		return false
	}
	if strings.HasPrefix(opt, "--") {
		name, _, has := strings.Cut(opt[2:], "=")
		lo, _, ok := lookupLong(sp, name)
		return ok && !has && lo.value == '='
	}
	last := opt[len(opt)-1]
	return strings.IndexByte(sp.valued, last) >= 0 && strings.IndexByte(opt[1:len(opt)-1], last) < 0 &&
		allIn(opt[1:len(opt)-1], sp.flags)
}

func allIn(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

// gitSubIndex finds git's subcommand in c's argv, or -1.
func gitSubIndex(c *Command) int {
	argv := c.Argv
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if isDynamic(c, i) {
			return i
		}
		switch {
		case a == "-c" || a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--super-prefix":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return i
		}
	}
	return -1
}
