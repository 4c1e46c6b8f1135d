package shellread

import "strings"

// StartsArgv reports whether ReadArgv(argv) could find more than argv
// itself, or mark it (Undecidable, Risk, ArgsFromInput): true for shells
// and wrappers, and for find, git, rg, tar … only when an option or
// subcommand that runs something is present. It does not allocate, so a
// caller can skip ReadArgv on the common path (`git status`).
func StartsArgv(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	base := baseName(argv[0])
	if !Starts(base) {
		return false
	}
	args := argv[1:]
	switch base {
	case "find":
		return anyOf(args, "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls", "-delete")
	case "sed", "gsed", "awk", "gawk", "mawk", "nawk", "go", "make", "gmake":
		return len(args) > 0
	case "curl", "wget", "wget2":
		// Files they write and wget -b are options; a bare URL is neither.
		for _, a := range args {
			if len(a) > 1 && a[0] == '-' {
				return true
			}
		}
		return false
	case "dd":
		for _, a := range args {
			if strings.HasPrefix(a, "of=") {
				return true
			}
		}
		return false
	case "git":
		return gitStarts(args) || gitOutput(args) || gitConfigWrite(argv)
	}
	if _, ok := writeSpecs[base]; ok && len(args) > 0 {
		return true
	}
	if g, ok := grammars()[base]; ok {
		return grammarRuns(g, argv, 1)
	}
	if opts, ok := execOpts[base]; ok {
		if _, wrapper := wrappers[base]; !wrapper {
			for _, a := range args {
				if a == "--" {
					return false
				}
				for _, e := range opts {
					if optionNamed(a, e) {
						return true
					}
				}
			}
			return false
		}
	}
	return true
}

// optionNamed reports whether a spells option e (with or without a value).
func optionNamed(a string, e execOpt) bool {
	if e.long != "" && strings.HasPrefix(a, "--") {
		name := a[2:]
		if i := strings.IndexByte(name, '='); i >= 0 {
			name = name[:i]
		}
		return name == e.long || name != "" && strings.HasPrefix(e.long, name)
	}
	return e.short != 0 && len(a) >= 2 && a[0] == '-' && a[1] == e.short
}

func anyOf(args []string, names ...string) bool {
	for _, a := range args {
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}

// gitStarts: git runs something from its arguments only through -c,
// --config-env, --exec-path=, or the subcommands gitSub reads.
func gitStarts(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || strings.HasPrefix(a, "--config-env") || strings.HasPrefix(a, "--exec-path="):
			return true
		case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--super-prefix":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			rest := args[i+1:]
			switch a {
			case "bisect":
				return len(rest) > 0 && rest[0] == "run"
			case "submodule":
				return anyOf(rest, "foreach")
			case "filter-branch", "config", "init", "grep", "send-email", "instaweb", "daemon":
				return true
			case "clone", "fetch", "pull", "ls-remote", "push", "archive", "send-pack":
				if a == "clone" && hasExecOpt(rest, execOpt{long: "config", short: 'c'}) {
					return true
				}
				for _, r := range rest {
					if strings.HasPrefix(r, "ext::") || strings.Contains(r, "=ext::") {
						return true
					}
				}
			}
			if g, ok := gitGrammars()[a]; ok && grammarRuns(g, args, i+1) {
				return true
			}
			return false
		}
	}
	return false
}

func hasExecOpt(args []string, opts ...execOpt) bool {
	for _, a := range args {
		for _, e := range opts {
			if optionNamed(a, e) {
				return true
			}
		}
	}
	return false
}

// gitOutput: git writes a file named by --output (diff, log, show) or
// --output-directory / -o (format-patch).
func gitOutput(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if strings.HasPrefix(a, "--output") || a == "-o" {
			return true
		}
	}
	return false
}
