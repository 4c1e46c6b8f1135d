package shellread

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Arithmetic in bash evaluates the value of every variable it names as
// arithmetic again, and an array subscript in that value runs its command
// substitutions: x='a[$(rm -rf ~)]'; echo $((x)) runs rm. So does a value
// read from a file or a command (read x < f; [[ $x -eq 0 ]]). dash takes
// only numbers there. In bash, arithmetic may therefore only name variables
// whose value the string gave them and that hold no subscript: literals,
// arithmetic results, literal loop items. Any other name is undecidable.

// arithSafeSpecial are variables bash sets to numbers.
var arithSafeSpecial = map[string]bool{
	"#": true, "?": true, "$": true, "!": true, "RANDOM": true, "SRANDOM": true, "LINENO": true, "SECONDS": true,
	"EPOCHSECONDS": true, "BASHPID": true, "PPID": true, "UID": true, "EUID": true, "OPTIND": true,
}

// arithSafe reports whether name may appear in bash arithmetic.
func (sh *shellState) arithSafe(name string) bool {
	return arithSafeSpecial[name] || sh.safe[name]
}

// markValue records what an assignment gives name: safe when its value
// is a literal without a subscript, or an arithmetic result.
func (sh *shellState) markValue(name string, value *syntax.Word, array *syntax.ArrayExpr) {
	if sh == nil || name == "" {
		return
	}
	sh.safe[name] = safeValue(value, array)
}

func safeValue(value *syntax.Word, array *syntax.ArrayExpr) bool {
	if array != nil {
		for _, e := range array.Elems {
			if e.Index != nil || !safeValue(e.Value, nil) {
				return false
			}
		}
		return true
	}
	if value == nil {
		return true // x= is empty
	}
	if len(value.Parts) == 1 {
		if _, ok := value.Parts[0].(*syntax.ArithmExp); ok {
			return true
		}
	}
	lit, ok := literalText(value)
	return ok && !strings.ContainsAny(lit, "[`$")
}

// literalText is the text of a word made only of literals and quotes.
func literalText(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(x.Value)
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
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

// forgetAssigned marks unsafe every name that n may assign, before a loop
// whose later rounds see what earlier rounds assigned.
func (sh *shellState) forgetAssigned(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Assign:
			if x.Name != nil && !safeValue(x.Value, x.Array) {
				sh.safe[x.Name.Value] = false
			}
		case *syntax.WordIter:
			sh.safe[x.Name.Value] = false
		case *syntax.ParamExp:
			if x.Param != nil && x.Exp != nil {
				sh.safe[x.Param.Value] = false
			}
		case *syntax.CallExpr:
			for _, w := range x.Args {
				if l := w.Lit(); isName(l) {
					sh.safe[l] = false // read x, printf -v x, mapfile x …
				}
			}
		}
		return true
	})
}

// arithWhy reports why the arithmetic expression e cannot be decided in
// bash: it names a variable whose value may hold a subscript.
func (s scope) arithWhy(e syntax.Node) string {
	if s.dialect != Bash || e == nil {
		return ""
	}
	why := ""
	syntax.Walk(e, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		switch x := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			// Its output is evaluated as arithmetic in turn.
			why = "arithmetic on the output of a command, which is only known at run time and runs any command substitution in an array subscript it holds (bash)"
			return false
		case *syntax.BinaryArithm:
			if w, ok := x.X.(*syntax.Word); ok && assignOp(x.Op) && isName(w.Lit()) {
				// A plain assignment does not read the old value; what
				// any assignment leaves is a number.
				why = s.arithWhy(x.Y)
				if x.Op != syntax.Assgn {
					why = firstNonEmpty(s.arithWhy(x.X), why)
				}
				if why == "" {
					s.shell.safe[w.Lit()] = true
				}
				return false
			}
		case *syntax.UnaryArithm:
			if w, ok := x.X.(*syntax.Word); ok && (x.Op == syntax.Inc || x.Op == syntax.Dec) && isName(w.Lit()) {
				why = s.arithWhy(x.X)
				if why == "" {
					s.shell.safe[w.Lit()] = true
				}
				return false
			}
		case *syntax.SglQuoted:
			// `let 'a[$(cmd)]=1'`: the quoted text is evaluated.
			if strings.ContainsAny(x.Value, "[$`") {
				why = "arithmetic on quoted text holding a subscript or an expansion, which bash evaluates and runs (bash)"
			}
			return false
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "[$`") {
					why = "arithmetic on quoted text holding a subscript or an expansion, which bash evaluates and runs (bash)"
				}
			}
		case *syntax.Word:
			if l := x.Lit(); l != "" {
				for _, name := range arithNames(l) {
					if !s.shell.arithSafe(name) {
						why = "arithmetic on " + name + ", whose value is only known at run time, runs any command substitution in an array subscript it holds (bash)"
					}
				}
			}
		case *syntax.ParamExp:
			if x.Param != nil && !s.shell.arithSafe(x.Param.Value) {
				why = "arithmetic on $" + x.Param.Value + ", whose value is only known at run time, runs any command substitution in an array subscript it holds (bash)"
			}
		}
		return true
	})
	return why
}

// arithNames lists the variable names in the literal text of an arithmetic
// operand (`x`, `a[i]`, `0x1f` names none).
func arithNames(l string) []string {
	var out []string
	for i := 0; i < len(l); {
		c := l[i]
		switch {
		case c >= '0' && c <= '9':
			for i < len(l) && (isWordChar(l[i])) {
				i++ // a number, in any base (0x1f, 2#101, 64#_z)
			}
			if i < len(l) && l[i] == '#' {
				i++
				for i < len(l) && (isWordChar(l[i]) || l[i] == '@') {
					i++
				}
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(l) && isWordChar(l[j]) {
				j++
			}
			out = append(out, l[i:j])
			i = j
		default:
			i++
		}
	}
	return out
}

func isWordChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// arithIn reports why arithmetic anywhere in n cannot be decided: $((…)),
// ((…)), let, a C-style for, an array subscript, a slice, [[ -eq ]].
func (s scope) arithIn(n syntax.Node) string {
	if s.dialect != Bash || n == nil {
		return ""
	}
	why := ""
	syntax.Walk(n, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		switch x := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false // read as commands of their own
		case *syntax.ArithmExp:
			why = s.arithWhy(x.X)
		case *syntax.ArithmCmd:
			why = s.arithWhy(x.X)
		case *syntax.LetClause:
			for _, e := range x.Exprs {
				why = firstNonEmpty(why, s.arithWhy(e))
			}
		case *syntax.CStyleLoop:
			why = firstNonEmpty(firstNonEmpty(s.arithWhy(x.Init), s.arithWhy(x.Cond)), s.arithWhy(x.Post))
		case *syntax.ParamExp:
			if x.Index != nil {
				if w, ok := x.Index.(*syntax.Word); !ok || w.Lit() != "@" && w.Lit() != "*" {
					why = s.arithWhy(x.Index)
				}
			}
			if x.Slice != nil {
				why = firstNonEmpty(why, firstNonEmpty(s.arithWhy(x.Slice.Offset), s.arithWhy(x.Slice.Length)))
			}
		case *syntax.BinaryTest:
			switch x.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				why = firstNonEmpty(s.arithWhy(x.X), s.arithWhy(x.Y))
			}
		case *syntax.Assign:
			if x.Index != nil {
				why = s.arithWhy(x.Index)
			}
		}
		return why == ""
	})
	return why
}
