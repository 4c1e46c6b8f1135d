package policy

import (
	"strings"

	"github.com/airlock-run/airlock/policy/shellread"
)

// Options that make an otherwise harmless program run another program of the
// caller's choosing. They matter only when programs are restricted (a
// shell.allow list or argument rules): then `git -c core.fsmonitor=sh status`
// would run sh where only git is allowed. Such a call escalates with the
// rule "builtin.exec-option". (shellread also reads the commands these
// options name when it can; this table is the backstop for the argv path and
// for spellings it cannot read.)

type execOpt struct {
	name string // "-c", "--pre"; a long name also matches "--name=value"
	// global means only before the first word (git's own options, not a
	// subcommand's: `git commit -c HEAD` reuses a message).
	global bool
}

var execOpts = map[string][]execOpt{
	"git": {{name: "-c", global: true}, {name: "--config-env", global: true}, {name: "--exec-path", global: true},
		// A repository named outright is taken whatever it holds: its
		// config and hooks run (core.fsmonitor on status).
		{name: "--git-dir", global: true},
		{name: "--upload-pack"}, {name: "--receive-pack"}, {name: "--exec"}, {name: "--extcmd"}},
	"rg":      {{name: "--pre"}},
	"tar":     {{name: "--to-command"}, {name: "--use-compress-program"}, {name: "-I"}, {name: "--checkpoint-action"}, {name: "--info-script"}, {name: "--new-volume-script"}, {name: "-F"}, {name: "--rsh-command"}, {name: "--rmt-command"}},
	"rsync":   {{name: "-e"}, {name: "--rsh"}, {name: "--rsync-path"}},
	"ssh":     {{name: "-o"}, {name: "-F"}},
	"scp":     {{name: "-S"}, {name: "-o"}, {name: "-F"}},
	"sftp":    {{name: "-S"}, {name: "-o"}, {name: "-F"}},
	"zip":     {{name: "-T"}, {name: "--unzip-command"}, {name: "-TT"}},
	"sort":    {{name: "--compress-program"}},
	"install": {{name: "--strip-program"}},
	"man":     {{name: "-P"}, {name: "--pager"}, {name: "-H"}, {name: "--html"}},
	"less":    {{name: "--lesskey-src"}},
	"fd":      {{name: "-x"}, {name: "--exec"}, {name: "-X"}, {name: "--exec-batch"}},
}

// gitExecSubcommands run a command given on the command line.
var gitExecSubcommands = map[string]bool{"filter-branch": true, "difftool": true, "mergetool": true}

// execOption reports whether args (without argv[0]) hold an option that
// makes prog run another program. It does not allocate.
func execOption(prog string, args []string) bool {
	return execOptionIn(prog, execOpts[prog], args)
}

// execOptionIn is execOption with prog's entry of execOpts already looked
// up.
func execOptionIn(prog string, opts []execOpt, args []string) bool {
	if runs, known := shellread.OptionsRun(prog, args); known {
		// The reader's option grammar: clusters, attached values,
		// abbreviations and tar's old style, one table for both.
		return runs
	}
	if len(opts) == 0 {
		return false
	}
	sawWord := false
	for i, a := range args {
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			if prog == "git" && !sawWord {
				if gitExecSubcommands[a] {
					return true
				}
				if (a == "bisect" || a == "submodule") && i+1 < len(args) &&
					(args[i+1] == "run" || args[i+1] == "foreach") {
					return true
				}
				if a == "rebase" {
					for _, b := range args[i+1:] {
						if b == "-x" || b == "--exec" || strings.HasPrefix(b, "--exec=") {
							return true
						}
					}
				}
			}
			sawWord = true
			continue
		}
		for _, o := range opts {
			if o.global && sawWord {
				continue
			}
			if optionIs(a, o.name) {
				return true
			}
		}
	}
	return false
}

// optionIs matches one argument against an option name: "--pre" matches
// "--pre" and "--pre=x"; "-e" matches "-e", "-ecmd" and a cluster holding
// e ("-ave"); "-exec" (find's single-dash words) matches exactly.
func optionIs(a, name string) bool {
	if a == name {
		return true
	}
	if strings.HasPrefix(name, "--") {
		return strings.HasPrefix(a, name) && len(a) > len(name) && a[len(name)] == '='
	}
	if len(name) != 2 {
		return false // find's -exec style: exact only
	}
	if strings.HasPrefix(a, "--") {
		return false
	}
	return strings.IndexByte(a[1:], name[1]) >= 0
}
