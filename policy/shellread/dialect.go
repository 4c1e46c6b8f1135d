package shellread

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// differs names the first construct of f that the shell of dialect d would
// run differently than this reader reads it, or "" when there is none.
// The parser accepts a few bash constructs in POSIX mode that dash reads as
// something else (`[[ a > b ]]` is a test to bash and a redirection that
// truncates b to dash), and here-documents end differently in every shell
// when their delimiter is not plain text.
func differs(f *syntax.File, src string, d Dialect) string {
	why := ""
	syntax.Walk(f, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		if rd, ok := n.(*syntax.Redirect); ok {
			why = hdocDiffers(rd, src)
		}
		if d == POSIX && why == "" {
			why = notPOSIX(n)
		}
		return why == ""
	})
	return why
}

// notPOSIX names a construct dash does not have, which the parser still
// accepts in POSIX mode.
func notPOSIX(n syntax.Node) string {
	switch x := n.(type) {
	case *syntax.TestClause:
		return "[[ … ]] is bash syntax; dash runs [[ as a program and reads < and > in it as redirections"
	case *syntax.ArithmCmd:
		return "(( … )) is bash syntax; dash runs it as two subshells"
	case *syntax.LetClause:
		return "let is bash syntax; dash runs it as a program"
	case *syntax.CoprocClause:
		return "coproc is bash syntax; dash runs it as a program"
	case *syntax.TimeClause:
		return "time is a bash keyword; dash runs it as a program"
	case *syntax.DeclClause:
		switch x.Variant.Value {
		case "export", "readonly", "local":
			return ""
		}
		return x.Variant.Value + " is a bash builtin; dash runs it as a program"
	case *syntax.SglQuoted:
		if x.Dollar {
			return "$'…' is bash syntax; dash reads $ and a quoted string"
		}
	case *syntax.DblQuoted:
		if x.Dollar {
			return `$"…" is bash syntax; dash reads $ and a quoted string`
		}
	case *syntax.ExtGlob:
		return "an extended glob is bash syntax"
	case *syntax.ProcSubst:
		return "<(…) and >(…) are bash syntax"
	case *syntax.FuncDecl:
		if x.RsrvWord || !x.Parens {
			return "the function keyword is bash syntax"
		}
	case *syntax.BinaryCmd:
		if x.Op == syntax.PipeAll {
			return "|& is bash syntax; dash reads a background job"
		}
	case *syntax.CaseItem:
		if x.Op != syntax.Break {
			return ";& and ;;& are bash syntax"
		}
	case *syntax.Redirect:
		switch x.Op {
		case syntax.RdrAll, syntax.AppAll, syntax.WordHdoc:
			return "&>, &>> and <<< are bash syntax; dash reads & as a background job"
		}
	case *syntax.ParamExp:
		if x.Excl || x.Slice != nil || x.Repl != nil || x.Index != nil || x.Names != 0 {
			return "this parameter expansion is bash syntax"
		}
	}
	return ""
}

// hdocDiffers refuses here-documents whose end shells find differently: a
// delimiter that is not plain text (`<<$'E'` ends at E in bash and at $E in
// dash), and a body line that starts with the delimiter and goes on (bash
// ends `$(cat <<EOF … EOF)` at the `EOF)` line, the parser does not).
func hdocDiffers(rd *syntax.Redirect, src string) string {
	if rd.Op != syntax.Hdoc && rd.Op != syntax.DashHdoc {
		return ""
	}
	delim, ok := plainDelim(rd.Word)
	if !ok {
		return "a here-document delimiter that is not plain text, which shells end at different lines"
	}
	if rd.Hdoc == nil {
		return ""
	}
	start, end := int(rd.Hdoc.Pos().Offset()), int(rd.Hdoc.End().Offset())
	if start < 0 || end > len(src) || start > end {
		return "a here-document whose body cannot be located"
	}
	// The line after the body, which ended it, is read as well: it must
	// be exactly the delimiter.
	body := src[start:end]
	if i := strings.IndexByte(src[end:], '\n'); i >= 0 {
		body += src[end : end+i]
	} else {
		body += src[end:]
	}
	for _, l := range strings.Split(body, "\n") {
		if rd.Op == syntax.DashHdoc {
			l = strings.TrimLeft(l, "\t")
		}
		if l != delim && strings.HasPrefix(l, delim) && delim != "" {
			return "a here-document line that starts with its delimiter and goes on, which shells end differently"
		}
	}
	return ""
}

// plainDelim resolves a here-document delimiter made only of literal text,
// single quotes and double quotes holding literal text.
func plainDelim(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(x.Value, "$`") {
				return "", false
			}
			b.WriteString(strings.ReplaceAll(x.Value, `\`, ""))
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", false
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			if x.Dollar {
				return "", false
			}
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsAny(l.Value, "$`\\") {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// sameInBoth reports why text, run by a shell known only at run time, may
// run differently than read: it must parse as sh and as bash, and start the
// same programs in both.
func (r *reader) sameInBoth(text string, s scope) string {
	var got [2][]string
	for k, d := range []Dialect{POSIX, Bash} {
		f, err := parse(text, d)
		if err != nil {
			return "a string run by a shell known only at run time that does not read the same as sh and bash: " + err.Error()
		}
		sub := &reader{deadline: r.deadline}
		ns := s
		ns.src, ns.dialect, ns.shell, ns.parent = text, d, s.shell.fork(), -1
		ns.depth++
		sub.stmts(f.Stmts, ns)
		if sub.err != nil {
			return "a string run by a shell known only at run time that cannot be read: " + sub.err.Error()
		}
		for _, c := range sub.out {
			got[k] = append(got[k], strings.Join(c.Argv, "\x00")+"\x01"+c.Undecidable)
		}
	}
	if strings.Join(got[0], "\x02") != strings.Join(got[1], "\x02") {
		return "a string run by a shell known only at run time that sh and bash read differently"
	}
	return ""
}
