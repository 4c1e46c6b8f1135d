package policy

import (
	"fmt"
	"slices"
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
	// alts[i], when set, is the canonical spelling of the literal option
	// a glob flags[i] starts with: `--force*` also means `-f`.
	alts  []string
	words []string
	rest  bool
}

// flagMatch reports whether pattern option i matches option f.
func (ap *argPattern) flagMatch(i int, f string) bool {
	return wordGlob(ap.flags[i], f) || ap.alts[i] != "" && ap.alts[i] == f
}

func (ap *argPattern) flagIn(i int, fs []string) bool {
	for _, f := range fs {
		if ap.flagMatch(i, f) {
			return true
		}
	}
	return false
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
	canon := shellread.Canon(prog, toks)
	ap.flags, ap.words = splitArgs(canon, ap.flags[:0], ap.words[:0])
	ap.alts = make([]string, len(ap.flags))
	// A glob option such as `--force*` covers the literal `--force`, whose
	// canonical spelling may be `-f`: find it by canonicalising the pattern
	// with the literal in the glob's place.
	for i, t := range toks {
		k := strings.IndexAny(t, globMeta)
		if k < 0 || !strings.HasPrefix(t, "--") || k <= 3 || t[k-1] == '=' {
			continue
		}
		lit := slices.Clone(toks)
		lit[i] = t[:k]
		lc := shellread.Canon(prog, lit)
		if len(lc) != len(canon) {
			continue
		}
		for j := range lc {
			if lc[j] != canon[j] && lc[j] != t[:k] {
				if fi := slices.Index(ap.flags, canon[j]); fi >= 0 {
					ap.alts[fi] = lc[j]
				}
			}
		}
	}
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

// appendFlags appends the options of args (as splitArgs sees them) to dst.
func appendFlags(dst, args []string) []string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) > 1 && a[0] == '-' {
			dst = append(dst, a)
		}
	}
	return dst
}

// contains reports whether a deny/escalate pattern is in the call. An
// option of the pattern may match the call's options in canonical form or
// as written (raw): a glob such as `--force*` cannot be brought to the
// canonical spelling, so it is also tried on the spelling the caller used.
func (ap *argPattern) contains(flags, raw, words []string) bool {
	for i := range ap.flags {
		if !ap.flagIn(i, flags) && !ap.flagIn(i, raw) {
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
	for i := range ap.flags {
		if !ap.flagIn(i, flags) {
			return false
		}
	}
	if ap.rest {
		return true
	}
	for _, f := range flags {
		hit := false
		for i := range ap.flags {
			if ap.flagMatch(i, f) {
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
	var cb, fb, wb, rb [24]string
	canon := shellread.AppendCanon(cb[:0], ar.prog, args)
	flags, words := splitArgs(canon, fb[:0], wb[:0])
	raw := appendFlags(rb[:0], args)
	for i := range ar.deny {
		if ar.deny[i].contains(flags, raw, words) {
			return Decision{Verdict: Deny, Category: CatShell, Rule: ar.deny[i].rule}
		}
	}
	for i := range ar.escal {
		if ar.escal[i].contains(flags, raw, words) {
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
