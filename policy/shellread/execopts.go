package shellread

import (
	"strings"
)

// Programs that look read-only but run a command named in an option or a
// setting. Each such command is listed as a command of its own, held by the
// program, so a policy decides it like any other.

// execOpt is one option whose value is a command.
type execOpt struct {
	long   string // without the leading --
	short  byte   // 0 when none
	script bool   // the value is run through sh -c; otherwise it is a program
	prefix string // only values starting with prefix, which is removed (tar's exec=)
}

// execOpts are programs with one option whose value is a command and few
// other options; the programs with more are in grammars.
var execOpts = map[string][]execOpt{
	"sort":    {{long: "compress-program"}},
	"install": {{long: "strip-program"}},
	"rg":      {{long: "pre"}},
}

// execOptions reads the commands named in options of program base.
func (r *reader) execOptions(idx int, base string, s scope) {
	specs := execOpts[base]
	argv := r.out[idx].Argv
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			return
		}
		for _, e := range specs {
			val, at, ok := optionValue(argv, i, e)
			if !ok {
				continue
			}
			if e.prefix != "" {
				low := strings.ToLower(val)
				p := e.prefix
				if base == "ssh" || base == "scp" || base == "sftp" {
					// ProxyCommand, LocalCommand and KnownHostsCommand run
					// through the user's shell; "Key Value" is allowed too.
					p = ""
					for _, k := range []string{"proxycommand", "localcommand", "knownhostscommand"} {
						if strings.HasPrefix(low, k) {
							rest := strings.TrimLeft(val[len(k):], " \t")
							if strings.HasPrefix(rest, "=") {
								rest = rest[1:]
							}
							val, p = rest, k
						}
					}
					if p == "" {
						continue
					}
				} else {
					if !strings.HasPrefix(low, p) {
						continue
					}
					val = val[len(p):]
				}
			}
			if isDynamic(&r.out[idx], at) {
				r.undecidable(idx, "%s runs a command only known at run time", base)
				return
			}
			if e.script {
				r.script(idx, val, s)
			} else {
				r.program1(idx, val, s)
			}
		}
	}
}

// optionValue returns the value of option e if argv[i] is that option.
func optionValue(argv []string, i int, e execOpt) (val string, at int, ok bool) {
	a := argv[i]
	if e.long != "" && strings.HasPrefix(a, "--") {
		name, v, has := strings.Cut(a[2:], "=")
		if name != e.long && !(name != "" && strings.HasPrefix(e.long, name)) {
			return "", 0, false
		}
		if has {
			return v, i, true
		}
		if i+1 < len(argv) {
			return argv[i+1], i + 1, true
		}
		return "", 0, false
	}
	if e.short != 0 && len(a) >= 2 && a[0] == '-' && a[1] == e.short {
		if len(a) > 2 {
			return a[2:], i, true
		}
		if i+1 < len(argv) {
			return argv[i+1], i + 1, true
		}
	}
	return "", 0, false
}

// program1 adds a program named by an option value (rg --pre, sort
// --compress-program); it gets file names at run time.
func (r *reader) program1(idx int, prog string, s scope) {
	r.inner(idx, 0, s, innerOpts{argv: []string{prog}, fromInput: true})
}

// gitExecKeys are git settings whose value is a command git runs, matched
// on the lower-cased key; "*" stands for one subsection.
var gitExecKeys = []string{
	"core.fsmonitor", "core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.gitproxy",
	"core.alternaterefscommand", "sequence.editor", "diff.external", "diff.*.textconv", "diff.*.command",
	"merge.*.driver", "filter.*.clean", "filter.*.smudge", "filter.*.process", "gpg.program",
	"gpg.*.program", "credential.helper", "credential.*.helper", "pager.*", "uploadpack.packobjectshook",
	"remote.*.uploadpack", "remote.*.receivepack", "mergetool.*.cmd", "difftool.*.cmd", "browser.*.cmd",
	"man.*.cmd", "sendemail.sendmailcmd", "sendemail.*.sendmailcmd", "web.browser",
}

// gitUndecidableKeys are settings that make git run code we cannot see.
var gitUndecidableKeys = []string{
	"core.hookspath", "include.path", "includeif.*.path", "init.templatedir", "protocol.allow",
	"protocol.*.allow", "alias.*", "core.worktree", "remote.*.vcs", "safe.directory", "core.sshcommand.*",
}

func matchKey(pattern, key string) bool {
	pp := strings.Split(pattern, ".")
	first, rest, ok := strings.Cut(key, ".")
	if !ok {
		return false
	}
	last := rest
	sub := ""
	if j := strings.LastIndexByte(rest, '.'); j >= 0 {
		sub, last = rest[:j], rest[j+1:]
	}
	switch len(pp) {
	case 2:
		return sub == "" && pp[0] == first && pp[1] == last
	case 3:
		return sub != "" && pp[0] == first && (pp[1] == "*" || pp[1] == sub) && pp[2] == last
	}
	return false
}

// gitKey lower-cases the section and variable name of a git key; the
// subsection is case-sensitive and kept.
func gitKey(k string) string {
	first, rest, ok := strings.Cut(k, ".")
	if !ok {
		return strings.ToLower(k)
	}
	j := strings.LastIndexByte(rest, '.')
	if j < 0 {
		return strings.ToLower(first) + "." + strings.ToLower(rest)
	}
	return strings.ToLower(first) + "." + rest[:j] + "." + strings.ToLower(rest[j+1:])
}

// gitSetting checks one key=value setting given to git.
func (r *reader) gitSetting(idx int, kv string, dynamic bool, s scope) {
	k, v, _ := strings.Cut(kv, "=")
	if dynamic && strings.ContainsAny(k, "$`\"'\\*?[{~") {
		r.undecidable(idx, "git setting whose name is only known at run time")
		return
	}
	key := gitKey(k)
	for _, p := range gitUndecidableKeys {
		if matchKey(p, key) || (p == "alias.*" && strings.HasPrefix(key, "alias.")) {
			r.undecidable(idx, "git setting %s makes git run code that is not on the command line", k)
			return
		}
	}
	for _, p := range gitExecKeys {
		if !matchKey(p, key) {
			continue
		}
		if dynamic {
			r.undecidable(idx, "git setting %s runs a command only known at run time", k)
			return
		}
		switch strings.ToLower(v) {
		case "", "true", "false", "yes", "no", "on", "off", "1", "0":
			if key == "core.fsmonitor" || strings.HasPrefix(key, "pager.") {
				return // a boolean, not a command
			}
		}
		if strings.HasPrefix(key, "credential.") && !strings.HasPrefix(v, "!") {
			if strings.HasPrefix(v, "/") {
				r.script(idx, v, s)
				return
			}
			r.program1(idx, "git-credential-"+strings.Fields(v + " x")[0], s)
			return
		}
		r.script(idx, strings.TrimPrefix(v, "!"), s)
		return
	}
}

// gitExec reads the commands that git options and settings run.
func (r *reader) gitExec(idx int, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-c":
			if i+1 < len(argv) {
				i++
				r.gitSetting(idx, argv[i], isDynamic(c, i), s)
				c = &r.out[idx]
			}
		case strings.HasPrefix(a, "--config-env"):
			r.undecidable(idx, "git --config-env takes a setting from the environment")
		case strings.HasPrefix(a, "--exec-path="):
			r.undecidable(idx, "git --exec-path changes where git finds its programs")
		case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--super-prefix":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			r.gitSub(idx, i, s)
			return
		}
	}
}

// gitSub reads the commands git subcommand argv[i] runs from its options.
func (r *reader) gitSub(idx, i int, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	sub := argv[i]
	rest := argv[i+1:]
	at := func(k int) bool { return isDynamic(c, i+1+k) }
	if g, ok := gitGrammars()[sub]; ok {
		r.runGrammar(idx, i+1, g, "git "+sub, s)
		c = &r.out[idx]
	}
	switch sub {
	case "bisect":
		if len(rest) > 1 && rest[0] == "run" {
			r.inner(idx, i+2, s, innerOpts{})
		}
	case "submodule":
		for k := 0; k < len(rest); k++ {
			if rest[k] == "foreach" {
				k++
				for k < len(rest) && strings.HasPrefix(rest[k], "-") {
					k++
				}
				for d := k; d < len(rest); d++ {
					if at(d) {
						r.undecidable(idx, "git submodule foreach of a command only known at run time")
						return
					}
				}
				if k < len(rest) {
					r.script(idx, strings.Join(rest[k:], " "), s)
				}
				return
			}
		}
	case "filter-branch":
		for k := 0; k < len(rest); k++ {
			for _, f := range []string{"env-filter", "tree-filter", "index-filter", "parent-filter",
				"msg-filter", "commit-filter", "tag-name-filter", "setup"} {
				if v, vi, ok := optionValue(rest, k, execOpt{long: f}); ok && strings.HasPrefix(rest[k], "--"+f) {
					if at(vi) {
						r.undecidable(idx, "git filter-branch of a command only known at run time")
						return
					}
					r.script(idx, v, s)
				}
			}
		}
	case "clone", "fetch", "pull", "ls-remote", "push", "archive", "send-pack":
		for k := 0; k < len(rest); k++ {
			if sub == "clone" {
				// clone -c KEY=VALUE sets up the new repository's config
				// (core.hooksPath, core.fsmonitor) before its checkout.
				if v, vi, ok := optionValue(rest, k, execOpt{long: "config", short: 'c'}); ok && (rest[k] == "-c" || strings.HasPrefix(rest[k], "--con")) {
					r.gitSetting(idx, v, at(vi), s)
				}
			}
			if strings.HasPrefix(rest[k], "ext::") || strings.Contains(rest[k], "=ext::") {
				r.undecidable(idx, "git's ext:: transport runs a command")
			}
		}
	case "init":
		for _, a := range rest {
			if strings.HasPrefix(a, "--template") {
				r.undecidable(idx, "git init --template copies hooks that later git commands run")
			}
		}
	case "grep":
		// -O[PAGER] / --open-files-in-pager[=PAGER] runs PAGER (through
		// the shell) with the matching files.
		for _, a := range rest {
			if a == "--" {
				break
			}
			v := ""
			switch {
			case strings.HasPrefix(a, "--"):
				name, val, _ := strings.Cut(a[2:], "=")
				if len(name) >= 2 && strings.HasPrefix("open-files-in-pager", name) {
					v = val
				}
			case strings.HasPrefix(a, "-"):
				if o := strings.IndexByte(a[1:], 'O'); o >= 0 {
					v = a[2+o:]
				}
			}
			if v != "" {
				r.script(idx, v, s)
			}
		}
	case "send-email":
		for k := 0; k < len(rest); k++ {
			for _, e := range []execOpt{{long: "sendmail-cmd"}, {long: "smtp-server"}, {long: "to-cmd"}, {long: "cc-cmd"}, {long: "header-cmd"}} {
				if v, vi, ok := optionValue(rest, k, e); ok && strings.HasPrefix(rest[k], "--"+e.long[:4]) {
					if at(vi) {
						r.undecidable(idx, "git send-email runs a command only known at run time")
						return
					}
					if e.long != "smtp-server" || strings.HasPrefix(v, "/") {
						r.script(idx, v, s)
					}
				}
			}
		}
	case "instaweb":
		c.Background = true
	case "daemon":
		if contains(rest, "--detach") {
			c.Background = true
		}
	case "config":
		// Storing a command in a setting makes a later, harmless-looking
		// git command run it.
		var ops []string
		for k := 0; k < len(rest); k++ {
			if !strings.HasPrefix(rest[k], "-") {
				ops = append(ops, rest[k])
			} else if rest[k] == "--file" || rest[k] == "-f" || rest[k] == "--blob" {
				k++
			}
		}
		if len(ops) >= 2 && ops[0] != "get" && ops[0] != "list" {
			key := ops[0]
			if key == "set" && len(ops) >= 3 {
				key = ops[1]
			}
			key = gitKey(key)
			for _, p := range append(append([]string(nil), gitExecKeys...), gitUndecidableKeys...) {
				if matchKey(p, key) || strings.HasPrefix(key, "alias.") {
					r.undecidable(idx, "git config stores a command that git runs later")
					return
				}
			}
		}
	}
}
