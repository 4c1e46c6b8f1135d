package policy

import (
	"fmt"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/policy/shellread"
)

// Argument patterns. A pattern is a list of whitespace-separated tokens; a
// token starting with "-" is an option, any other token a word. Both the
// pattern and the call's arguments go through shellread.Canon first, so
// `-rf`, `-r -f` and `--recursive --force` are one spelling, and options are
// compared as a set, so their order does not matter.
//
// Deny and escalate patterns match when the call contains them: every option
// of the pattern is among the call's options, and the pattern's words appear
// among the call's words in the same order (other words may come between).
// `push --force` therefore catches `git -c x=y push origin main --force`.
//
// Allow patterns match only a call of exactly their shape: the words one for
// one, and the call's options exactly the pattern's. A last token `*` lets
// anything (words or options) follow. `status` allows `git status` and
// nothing more; `log *` allows any `git log`.

type argPattern struct {
	rule  string
	flags []string
	words []string
	rest  bool
}

type argRules struct {
	prog                string
	allow, deny, escal  []argPattern
	allowRule, baseRule string
}

func compileArgRules(prog string, r ArgRules) (*argRules, error) {
	ar := &argRules{prog: prog, allowRule: "shell.args." + prog + ".allow", baseRule: "shell.args." + prog}
	if err := checkProgram(prog); err != nil || strings.Contains(prog, "/") {
		return nil, errs.Invalidf("policy: shell.args.%s: argument rules are keyed by a bare program name", prog)
	}
	for _, l := range []struct {
		name string
		in   []string
		out  *[]argPattern
	}{{"allow", r.Allow, &ar.allow}, {"deny", r.Deny, &ar.deny}, {"escalate", r.Escalate, &ar.escal}} {
		for i, s := range l.in {
			rule := fmt.Sprintf("shell.args.%s.%s[%d]", prog, l.name, i)
			if err := checkArgPattern(s); err != nil {
				return nil, errs.Invalidf("policy: %s: %q: %v", rule, s, err)
			}
			*l.out = append(*l.out, compilePattern(prog, rule, s))
		}
	}
	return ar, nil
}

func compilePattern(prog, rule, s string) argPattern {
	toks := strings.Fields(s)
	ap := argPattern{rule: rule}
	if n := len(toks); n > 0 && toks[n-1] == "*" {
		ap.rest = true
		toks = toks[:n-1]
	}
	// Canon brings the pattern to the call's spelling; tokens with globs
	// pass through it unchanged.
	toks = shellread.Canon(prog, toks)
	ap.flags, ap.words = splitArgs(toks, ap.flags[:0], ap.words[:0])
	return ap
}

// splitArgs appends the options and the words of args to flags and words.
// After "--" everything is a word; "-" alone is a word (standard input).
func splitArgs(args []string, flags, words []string) ([]string, []string) {
	opts := true
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
			words = append(words, a)
		case opts && len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
		default:
			words = append(words, a)
		}
	}
	return flags, words
}

// contains reports whether a deny/escalate pattern is in the call.
func (ap *argPattern) contains(flags, words []string) bool {
	for _, pf := range ap.flags {
		hit := false
		for _, f := range flags {
			if wordGlob(pf, f) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	j := 0
	for _, w := range words {
		if j < len(ap.words) && wordGlob(ap.words[j], w) {
			j++
		}
	}
	return j == len(ap.words)
}

// shape reports whether the call has exactly an allow pattern's shape.
func (ap *argPattern) shape(flags, words []string) bool {
	if !ap.rest && len(words) != len(ap.words) {
		return false
	}
	if len(words) < len(ap.words) {
		return false
	}
	for j, pw := range ap.words {
		if !wordGlob(pw, words[j]) {
			return false
		}
	}
	// Every pattern option must be present; without a trailing `*` every
	// call option must be one of the pattern's.
	for _, pf := range ap.flags {
		hit := false
		for _, f := range flags {
			if wordGlob(pf, f) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	if ap.rest {
		return true
	}
	for _, f := range flags {
		hit := false
		for _, pf := range ap.flags {
			if wordGlob(pf, f) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// decide applies the rules to a call's arguments (argv without argv[0]).
func (ar *argRules) decide(args []string) Decision {
	var cb, fb, wb [24]string
	canon := shellread.AppendCanon(cb[:0], ar.prog, args)
	flags, words := splitArgs(canon, fb[:0], wb[:0])
	for i := range ar.deny {
		if ar.deny[i].contains(flags, words) {
			return Decision{Verdict: Deny, Category: CatShell, Rule: ar.deny[i].rule}
		}
	}
	for i := range ar.escal {
		if ar.escal[i].contains(flags, words) {
			return Decision{Verdict: Escalate, Category: CatShell, Rule: ar.escal[i].rule}
		}
	}
	if len(ar.allow) == 0 {
		return Decision{Verdict: Allow, Category: CatShell}
	}
	for i := range ar.allow {
		if ar.allow[i].shape(flags, words) {
			return Decision{Verdict: Allow, Category: CatShell, Rule: ar.allow[i].rule}
		}
	}
	return Decision{Verdict: Deny, Category: CatShell, Rule: ar.allowRule}
}
