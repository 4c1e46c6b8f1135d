package policy

import (
	"errors"
	"path"
	"strings"
)

// Two kinds of pattern live in a policy. Path patterns (fs entries, tool
// conditions on paths) are matched segment by segment: "*", "?" and "[a-z]"
// stay inside one segment and a whole segment "**" spans any number of them.
// Word patterns (argument tokens, environment names) treat the text as one
// string, so "*" also spans "/" and "=": `--output=*` covers any value.

const globMeta = "*?[\\"

func hasMeta(s string) bool { return strings.ContainsAny(s, globMeta) }

// checkPathGlob reports a syntax error in a path pattern.
func checkPathGlob(p string) error {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "**" {
			continue
		}
		if strings.Contains(seg, "**") {
			return errors.New(`"**" must be a whole path segment, as in "src/**/*.go"`)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return errors.New("bad glob (an unclosed '[' or a trailing '\\')")
		}
	}
	return nil
}

// checkWordGlob reports a syntax error in a word pattern.
func checkWordGlob(p string) error {
	if _, ok := wordMatch(p, "", true); !ok {
		return errors.New("bad glob (an unclosed '[' or a trailing '\\')")
	}
	return nil
}

// cutSeg splits the first segment off a slash-separated string.
func cutSeg(s string) (seg, rest string) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// coverSegs reports whether pattern p matches s or one of its ancestors.
// Both are slash-separated without a leading slash; "" is the root.
func coverSegs(p, s string) bool {
	for {
		if p == "" {
			return true
		}
		pseg, prest := cutSeg(p)
		if pseg == "**" {
			for {
				if coverSegs(prest, s) {
					return true
				}
				if s == "" {
					return false
				}
				_, s = cutSeg(s)
			}
		}
		if s == "" {
			return false
		}
		sseg, srest := cutSeg(s)
		if !segMatch(pseg, sseg) {
			return false
		}
		p, s = prest, srest
	}
}

func segMatch(p, s string) bool {
	if !hasMeta(p) {
		return p == s
	}
	ok, err := path.Match(p, s)
	return ok && err == nil
}

// underDir reports whether the clean absolute path name is dir or lies below
// it.
func underDir(dir, name string) bool {
	if dir == "/" {
		return strings.HasPrefix(name, "/")
	}
	return strings.HasPrefix(name, dir) && (len(name) == len(dir) || name[len(dir)] == '/')
}

// pathPattern is a compiled fs entry: a clean absolute pattern and, when it
// has no glob, the literal directory it covers.
type pathPattern struct {
	pat     string // clean, absolute
	literal bool
}

func (pp *pathPattern) covers(name string) bool {
	if pp.literal {
		return underDir(pp.pat, name)
	}
	return coverSegs(pp.pat[1:], name[1:])
}

// wordMatch matches a word pattern against s: "*" is any run of characters,
// "?" one character, "[...]" a class ("[!...]" or "[^...]" negated), "\x" a
// literal x. With check set it only reports (via ok=false) a bad pattern.
func wordMatch(p, s string, check bool) (matched, ok bool) {
	// Classic backtracking on the last star: linear in practice, no
	// allocation.
	px, sx := 0, 0
	starP, starS := -1, -1
	for {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					px++
					sx++
					continue
				}
			case '[':
				n, hit, good := matchClass(p[px:], s, sx)
				if !good {
					return false, false
				}
				if hit {
					px += n
					sx++
					continue
				}
			case '\\':
				if px+1 >= len(p) {
					return false, false
				}
				if sx < len(s) && s[sx] == p[px+1] {
					px += 2
					sx++
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		} else if sx == len(s) {
			return true, true
		}
		if check {
			// Walk the rest of the pattern for syntax only.
			for px < len(p) {
				switch p[px] {
				case '\\':
					if px+1 >= len(p) {
						return false, false
					}
					px += 2
				case '[':
					n, _, good := matchClass(p[px:], "", 0)
					if !good {
						return false, false
					}
					px += n
				default:
					px++
				}
			}
			return false, true
		}
		if starP < 0 || starS >= len(s) {
			return false, true
		}
		starS++
		px, sx = starP+1, starS
	}
}

// matchClass matches the class at the start of p against s[i]. It returns the
// class's length in p, whether s[i] is in it, and whether the class is well
// formed.
func matchClass(p, s string, i int) (n int, hit, ok bool) {
	j := 1
	neg := false
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		neg = true
		j++
	}
	in := false
	first := true
	var c byte
	have := i < len(s)
	if have {
		c = s[i]
	}
	for {
		if j >= len(p) {
			return 0, false, false
		}
		if p[j] == ']' && !first {
			j++
			break
		}
		first = false
		lo := p[j]
		if lo == '\\' {
			j++
			if j >= len(p) {
				return 0, false, false
			}
			lo = p[j]
		}
		j++
		hi := lo
		if j+1 < len(p) && p[j] == '-' && p[j+1] != ']' {
			hi = p[j+1]
			if hi == '\\' {
				if j+2 >= len(p) {
					return 0, false, false
				}
				hi = p[j+2]
				j++
			}
			j += 2
		}
		if have && lo <= c && c <= hi {
			in = true
		}
	}
	return j, have && in != neg, true
}

func wordGlob(p, s string) bool {
	m, _ := wordMatch(p, s, false)
	return m
}
