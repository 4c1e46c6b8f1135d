package shellread

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// wordValue is a resolved shell word.
type wordValue struct {
	val     string // literal value, or the raw source text when dynamic
	dynamic bool   // only known at run time
	why     string // non-empty: the word makes its command undecidable
}

// word resolves quotes and escapes in w. Substitutions inside it are read as
// commands held by parent.
func (r *reader) word(w *syntax.Word, s scope, parent int) wordValue {
	if w == nil {
		return wordValue{}
	}
	var b strings.Builder
	var res wordValue
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v, glob := unescapeLit(p.Value)
			if glob {
				res.dynamic = true
			}
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				res.dynamic = true // tilde expansion
			}
			if strings.Contains(p.Value, "=~") || strings.Contains(p.Value, ":~") {
				res.dynamic = true // tilde expansion after = or : in assignment-like words
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			if strings.Contains(p.Value, "\\\n") {
				res.why = firstNonEmpty(res.why, "a backslash-newline inside quotes is read differently by different shells")
			}
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			if hasEscapedNewline(s.src, p.Left, p.Right) {
				res.why = firstNonEmpty(res.why, "a backslash-newline inside quotes is read differently by different shells")
			}
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(l.Value))
					continue
				}
				res.dynamic = true
				res.why = firstNonEmpty(res.why, r.substsIn(q, s, parent))
			}
		default:
			res.dynamic = true
			res.why = firstNonEmpty(res.why, r.substsIn(part, s, parent))
		}
	}
	if res.dynamic {
		res.val = rawText(s.src, w)
	} else {
		res.val = b.String()
		if strings.Contains(res.val, "[$(") || strings.Contains(res.val, "[`") {
			// bash runs a substitution in an array subscript when the
			// string is later evaluated as arithmetic: x='a[$(cmd)]'; ((x)).
			res.why = firstNonEmpty(res.why, "a string with a substitution in an array subscript runs it when used in arithmetic")
		}
	}
	return res
}

// substsIn reads the commands of every command and process substitution in
// n, and reports why an expansion in n cannot be decided, if it cannot.
func (r *reader) substsIn(n syntax.Node, s scope, parent int) (why string) {
	if n == nil {
		return ""
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			r.stmts(x.Stmts, subScope(s, parent, "cmdsubst"))
			return false
		case *syntax.ProcSubst:
			r.stmts(x.Stmts, subScope(s, parent, "procsubst"))
			return false
		case *syntax.ParamExp:
			if x.Param != nil && x.Param.Value == "IFS" {
				why = firstNonEmpty(why, "$IFS changes how words are split")
			}
			if x.Param != nil && x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) &&
				RiskyEnv(x.Param.Value) {
				why = firstNonEmpty(why, "${"+x.Param.Value+":=…} assigns a variable that changes what programs run")
			}
			if x.Param != nil && x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) && s.shell != nil {
				s.shell.safe[x.Param.Value] = false
			}
			if x.Exp != nil && x.Exp.Op == syntax.OtherParamOps {
				why = firstNonEmpty(why, "a ${var@…} transformation (prompt or escape expansion) is only known at run time")
			}
		case *syntax.BinaryArithm:
			if assignOp(x.Op) {
				if w, ok := x.X.(*syntax.Word); ok && (RiskyEnv(w.Lit()) || w.Lit() == "IFS") {
					why = firstNonEmpty(why, "arithmetic assigns "+w.Lit()+", which changes what programs run")
				}
			}
		case *syntax.UnaryArithm:
			if x.Op == syntax.Inc || x.Op == syntax.Dec {
				if w, ok := x.X.(*syntax.Word); ok && (RiskyEnv(w.Lit()) || w.Lit() == "IFS") {
					why = firstNonEmpty(why, "arithmetic assigns "+w.Lit()+", which changes what programs run")
				}
			}
		}
		return true
	})
	if s.shell != nil {
		why = firstNonEmpty(why, s.arithIn(n))
	}
	return why
}

// subScope is the scope of a substitution held by parent: it runs in a
// subshell of the current shell, so it shares via, input and background.
func subScope(s scope, parent int, how string) scope {
	s.parent = parent
	s.how = how
	s.redirs = nil
	s.shell = s.shell.fork()
	return s
}

// rawText is the source text of w, used for words only known at run time.
func rawText(src string, w *syntax.Word) string {
	return rawSpan(src, w)
}

func rawSpan(src string, n syntax.Node) string {
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	if a < 0 || b > len(src) || a > b {
		return "?"
	}
	return src[a:b]
}

// hasEscapedNewline reports whether a backslash-newline sits between the
// double quotes at l and r in src.
func hasEscapedNewline(src string, l, r syntax.Pos) bool {
	a, b := int(l.Offset()), int(r.Offset())
	if a < 0 || b > len(src) || a > b {
		return false
	}
	t := src[a:b]
	for i := 0; i < len(t)-1; i++ {
		if t[i] == '\\' {
			if t[i+1] == '\n' {
				return true
			}
			i++
		}
	}
	return false
}

// unescapeLit removes backslashes from an unquoted literal and reports
// whether it holds an unescaped glob or brace expansion.
func unescapeLit(v string) (string, bool) {
	var b strings.Builder
	glob := false
	brace, comma := false, false
	bracket := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' {
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i])
			}
			continue
		}
		switch c {
		case '*', '?':
			glob = true
		case '[':
			bracket = true
		case ']':
			if bracket {
				glob = true
			}
		case '{':
			brace = true
		case ',':
			if brace {
				comma = true
			}
		case '.':
			if brace && i+1 < len(v) && v[i+1] == '.' {
				comma = true
			}
		case '}':
			if brace && comma {
				glob = true
			}
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

// unescapeDouble removes the backslashes that are escapes inside double
// quotes: before $, `, ", \ and newline.
func unescapeDouble(v string) string { return unescapeIn(v, "$`\"\\") }

// unescapeHeredoc removes the backslashes that are escapes in an unquoted
// here-document: before $, `, \ and newline (not before ").
func unescapeHeredoc(v string) string { return unescapeIn(v, "$`\\") }

func unescapeIn(v, escapable string) string {
	if !strings.Contains(v, "\\") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			switch c := v[i+1]; {
			case strings.IndexByte(escapable, c) >= 0:
				i++
				b.WriteByte(v[i])
				continue
			case c == '\n':
				i++
				continue
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// ansiC decodes the body of a $'…' string the way bash does, stopping at a
// NUL as bash does.
func ansiC(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		i++
		switch v[i] {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(v[i])
		case 'c':
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i] & 0x1f)
			}
		case 'x':
			n, k := hexPrefix(v[i+1:], 2)
			if k == 0 {
				b.WriteString("\\x")
				continue
			}
			b.WriteByte(byte(n))
			i += k
		case 'u', 'U':
			max := 4
			if v[i] == 'U' {
				max = 8
			}
			n, k := hexPrefix(v[i+1:], max)
			if k == 0 {
				b.WriteByte('\\')
				b.WriteByte(v[i])
				continue
			}
			if n > utf8.MaxRune {
				n = utf8.RuneError
			}
			b.WriteRune(rune(n))
			i += k
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, k := 0, 0
			for k < 3 && i+k < len(v) && v[i+k] >= '0' && v[i+k] <= '7' {
				n = n*8 + int(v[i+k]-'0')
				k++
			}
			b.WriteByte(byte(n))
			i += k - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(v[i])
		}
	}
	out := b.String()
	if j := strings.IndexByte(out, 0); j >= 0 {
		out = out[:j]
	}
	return out
}

func hexPrefix(s string, max int) (int, int) {
	k := 0
	for k < max && k < len(s) && strings.IndexByte("0123456789abcdefABCDEF", s[k]) >= 0 {
		k++
	}
	if k == 0 {
		return 0, 0
	}
	n, _ := strconv.ParseUint(s[:k], 16, 32)
	return int(n), k
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// redirects resolves the redirections of a statement; substitutions in their
// words are held by parent.
func (r *reader) redirects(rs []*syntax.Redirect, s scope, parent int) ([]Redirect, string) {
	var out []Redirect
	why := ""
	for _, rd := range rs {
		x := Redirect{Op: rd.Op.String()}
		if rd.N != nil {
			x.Fd = rd.N.Value
		}
		switch rd.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			// The delimiter word is not expanded; an unquoted body is, and
			// its substitutions run.
			if rd.Hdoc != nil {
				quoted := rd.Word == nil || rd.Word.Lit() == "" || strings.Contains(rd.Word.Lit(), "\\")
				b := r.hdocBody(rd.Hdoc, quoted, s, parent)
				why = firstNonEmpty(why, b.why)
				x.Body, x.Dynamic = b.val, b.dynamic
			}
			out = append(out, x)
			continue
		}
		v := r.word(rd.Word, s, parent)
		why = firstNonEmpty(why, v.why)
		x.Path, x.Dynamic = v.val, v.dynamic
		if rd.Op == syntax.WordHdoc {
			x.Body, x.Path = x.Path, ""
			out = append(out, x)
			continue
		}
		switch rd.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
			syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
			x.Write = true
		case syntax.DplOut:
			// `>& file` (not a descriptor number or -) writes stdout and
			// stderr to file.
			if x.Dynamic || !isFd(x.Path) {
				x.Write = true
			}
		case syntax.DplIn:
			if x.Dynamic {
				why = firstNonEmpty(why, "a descriptor duplication whose target is only known at run time")
			}
		}
		out = append(out, x)
	}
	return out, why
}

// hdocBody resolves a here-document body: expanded like a double-quoted
// string unless the delimiter was quoted.
func (r *reader) hdocBody(w *syntax.Word, quoted bool, s scope, parent int) wordValue {
	var b strings.Builder
	var res wordValue
	var raw strings.Builder
	for _, part := range w.Parts {
		if l, ok := part.(*syntax.Lit); ok {
			if quoted {
				b.WriteString(l.Value)
			} else {
				b.WriteString(unescapeHeredoc(l.Value))
			}
			raw.WriteString(l.Value)
			continue
		}
		res.dynamic = true
		res.why = firstNonEmpty(res.why, r.substsIn(part, s, parent))
		raw.WriteString(rawSpan(s.src, part))
	}
	if res.dynamic {
		res.val = raw.String()
	} else {
		res.val = b.String()
	}
	return res
}

func isFd(s string) bool {
	s = strings.TrimSuffix(s, "-")
	if s == "" {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func assignOp(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
		syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn,
		syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
		return true
	}
	return false
}
