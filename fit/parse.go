package fit

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// part is one unit of a document's outline: a heading with what follows it,
// a definition, a file of a diff or one of its hunks, a top-level JSON member,
// a directory of a file list or one entry, a paragraph.
type part struct {
	title string   // as the outline shows it
	names []string // lower-case names a query may use
	level int      // 1 is the top
	start int      // byte offset in the read form where the part begins
	end   int      // where it ends, with its sub-parts
	head  int      // where its body begins (after the heading line)
	first string   // what the summary shows after the title; "" to look it up
	extra string   // a short note after the title ("+12 -3")
	adds  int      // diff files: lines added
	dels  int      // diff files: lines removed
}

// doc is a document parsed into parts.
type doc struct {
	text   string // the read form
	kind   Kind
	starts []int // byte offset of each line
	parts  []part
	own    []int64 // weight (thousandths) of each part's own text, before its first sub-part
	pre    int64   // weight of the text before the first part
}

func (d *doc) lines() int { return len(d.starts) }

// lineOf returns the 1-based line holding byte offset off.
func (d *doc) lineOf(off int) int {
	return sort.SearchInts(d.starts, off+1)
}

// lastLine returns the 1-based line of the last byte before end.
func (d *doc) lastLine(start, end int) int {
	if end <= start {
		return d.lineOf(start)
	}
	return d.lineOf(end - 1)
}

func lineStarts(text string) []int {
	n := strings.Count(text, "\n")
	starts := make([]int, 0, n+1)
	if text == "" {
		return starts
	}
	starts = append(starts, 0)
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		if i < len(text) {
			starts = append(starts, i)
		}
	}
	return starts
}

// parse reads text (already in its read form) as a document of kind k.
func parse(text string, k Kind) *doc {
	d := &doc{text: text, kind: k, starts: lineStarts(text)}
	switch k {
	case Markdown:
		d.parseMarkdown()
	case Code:
		d.parseCode()
	case Diff:
		d.parseDiff()
	case JSON:
		d.parseJSON()
	case FileList:
		d.parseFileList()
	default:
		d.parseText()
	}
	d.closeParts()
	d.weighParts()
	return d
}

// line returns line i (0-based) without its line break.
func (d *doc) line(i int) string {
	s := d.starts[i]
	e := len(d.text)
	if i+1 < len(d.starts) {
		e = d.starts[i+1]
	}
	return strings.TrimRight(d.text[s:e], "\r\n")
}

// closeParts sets each part's end: the start of the next part at its level
// or above, or the end of the text.
func (d *doc) closeParts() {
	var stack []int
	for i := range d.parts {
		p := &d.parts[i]
		if p.head < p.start {
			p.head = p.start
		}
		for len(stack) > 0 && d.parts[stack[len(stack)-1]].level >= p.level {
			d.parts[stack[len(stack)-1]].end = p.start
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, i)
	}
	for _, i := range stack {
		if d.parts[i].end == 0 {
			d.parts[i].end = len(d.text)
		}
	}
	if d.kind == JSON && len(d.parts) > 0 {
		// The closing bracket of the top-level value belongs to no member.
		last := &d.parts[len(d.parts)-1]
		if n := len(d.starts); n > 0 && d.starts[n-1] > last.start {
			last.end = d.starts[n-1]
		}
	}
}

// weighParts weighs the text once, in the stretches between part starts
// and ends, on all cores for a big text. Weigh is additive at the start of a
// line that is not blank, where every part begins, so the sums are the
// weights of the parts.
func (d *doc) weighParts() {
	d.own = make([]int64, len(d.parts))
	if len(d.parts) == 0 {
		d.pre = weighAll(d.text)
		return
	}
	// Stretches: the text before the first part, each part's own text up
	// to the next part's start or its end, and text after an end that
	// belongs to no part (a JSON closing bracket).
	type stretch struct{ start, end, owner int } // owner -1: no part
	st := make([]stretch, 0, len(d.parts)+2)
	if d.parts[0].start > 0 {
		st = append(st, stretch{0, d.parts[0].start, -1})
	}
	for i := range d.parts {
		next := len(d.text)
		if i+1 < len(d.parts) {
			next = d.parts[i+1].start
		}
		end := min(d.parts[i].end, next)
		if end > d.parts[i].start {
			st = append(st, stretch{d.parts[i].start, end, i})
		}
		if end < next {
			st = append(st, stretch{end, next, -1})
		}
	}
	w := make([]int64, len(st))
	parallel(len(d.text), len(st), func(k int) int { return st[k].end - st[k].start }, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			w[k] = weighMilli(d.text[st[k].start:st[k].end], nil)
		}
	})
	for k, x := range st {
		if x.owner >= 0 {
			d.own[x.owner] += w[k]
		} else {
			d.pre += w[k]
		}
	}
}

// tokensOf returns the weight of part i with its sub-parts.
func (d *doc) tokensOf(i int) int {
	var m int64
	for j := i; j < len(d.parts) && d.parts[j].start < d.parts[i].end; j++ {
		m += d.own[j]
	}
	return milliToTokens(m)
}

// total is the weight of the whole read form.
func (d *doc) total() int64 {
	m := d.pre
	for _, o := range d.own {
		m += o
	}
	return m
}

// --- Markdown ---

// atxHeading returns the text of a heading line "## Title", and whether the
// line is one.
func atxHeading(l string) (string, bool) {
	if len(l) < 2 || l[0] != '#' {
		return "", false
	}
	n := 0
	for n < len(l) && l[n] == '#' {
		n++
	}
	if n > 6 || (n < len(l) && l[n] != ' ' && l[n] != '\t') {
		return "", false
	}
	t := strings.TrimSpace(l[n:])
	t = strings.TrimSpace(strings.TrimRight(t, "#"))
	if t == "" {
		return "", false
	}
	return t, true
}

func (d *doc) parseMarkdown() {
	fence := ""
	for i := range d.starts {
		if len(d.parts) >= maxParts {
			break
		}
		// Most lines are prose: only a line whose first byte after
		// indentation is one of # ` ~ = - matters.
		k := d.starts[i]
		for k < len(d.text) && d.text[k] == ' ' {
			k++
		}
		if k == len(d.text) {
			continue
		}
		switch d.text[k] {
		case '#', '`', '~', '=', '-':
		default:
			continue
		}
		l := d.line(i)
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if title, ok := atxHeading(l); ok {
			lv := strings.IndexFunc(l, func(r rune) bool { return r != '#' })
			d.addHeading(title, lv, i, i+1)
			continue
		}
		// Setext: a line of = or - under a line of text.
		if i > 0 && len(t) >= 2 && (strings.Trim(t, "=") == "" || strings.Trim(t, "-") == "") {
			prev := strings.TrimSpace(d.line(i - 1))
			if prev != "" && !strings.HasPrefix(prev, "#") && !strings.HasPrefix(prev, "- ") && !strings.HasPrefix(prev, "* ") &&
				(i < 2 || strings.TrimSpace(d.line(i-2)) == "") {
				lv := 1
				if t[0] == '-' {
					lv = 2
				}
				d.addHeading(prev, lv, i-1, i+1)
			}
		}
	}
}

func (d *doc) addHeading(title string, level, line, bodyLine int) {
	head := len(d.text)
	if bodyLine < len(d.starts) {
		head = d.starts[bodyLine]
	}
	// The outline shows an ATX heading as it is written; a setext heading
	// gets the marks of its level. Query names are made when a query comes.
	shown := strings.TrimSpace(d.line(line))
	if !strings.HasPrefix(shown, "#") {
		shown = strings.Repeat("#", level) + " " + title
	} else {
		shown = strings.TrimSpace(strings.TrimRight(shown, "#"))
		if shown == "" || strings.Trim(shown, "#") == "" {
			shown = strings.Repeat("#", level) + " " + title
		}
	}
	d.parts = append(d.parts, part{title: shown, level: level, start: d.starts[line], head: head})
}

// headingText is a Markdown part's title without its marks.
func headingText(title string) string {
	return strings.TrimSpace(strings.TrimLeft(title, "#"))
}

// slug is a heading's anchor as Markdown renderers make it.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == ' ' || r == '-':
			b.WriteByte('-')
		case r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 0x7f:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// --- Code ---

// codeDef is a definition found on one line.
type codeDef struct {
	name      string // the defined name
	qual      string // Type.name for a method, "" otherwise
	title     string // the signature as the outline shows it
	container bool   // a class, impl, trait or interface: indented defs inside are its members
}

// definition reports the name and signature a line defines, if any.
func definition(l string) (string, string, bool) {
	d, ok := parseDef(l)
	return d.name, d.title, ok
}

func ident(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (i > 0 && c >= '0' && c <= '9') || c >= 0x80 {
			i++
			continue
		}
		break
	}
	return s[:i]
}

func cutPrefixes(s string, prefixes ...string) string {
	for again := true; again; {
		again = false
		for _, p := range prefixes {
			if strings.HasPrefix(s, p) {
				s = strings.TrimLeft(s[len(p):], " \t")
				again = true
			}
		}
	}
	return s
}

func signature(l string) string {
	t := strings.TrimSpace(l)
	if i := strings.LastIndex(t, " {"); i > 0 && strings.HasSuffix(t, "{") {
		t = t[:i]
	}
	t = strings.TrimSuffix(t, "{")
	t = strings.TrimSpace(t)
	return clip(t, 120)
}

// parseDef recognises definitions of Go, Python, JavaScript/TypeScript and
// Rust (and the class-like lines of Java-like languages).
func parseDef(l string) (codeDef, bool) {
	t := strings.TrimLeft(l, " \t")
	if t == "" {
		return codeDef{}, false
	}
	var d codeDef
	switch {
	case strings.HasPrefix(t, "func "): // Go
		r := t[5:]
		if strings.HasPrefix(r, "(") {
			j := strings.IndexByte(r, ')')
			if j < 0 {
				return d, false
			}
			recv := strings.Fields(r[1:j])
			rt := ""
			if len(recv) > 0 {
				rt = strings.TrimLeft(recv[len(recv)-1], "*")
				if k := strings.IndexByte(rt, '['); k >= 0 {
					rt = rt[:k]
				}
			}
			d.name = ident(strings.TrimSpace(r[j+1:]))
			if rt != "" && d.name != "" {
				d.qual = rt + "." + d.name
			}
		} else {
			d.name = ident(r)
		}
	case strings.HasPrefix(t, "type ") && !strings.HasPrefix(t, "type ("): // Go, TypeScript
		d.name = ident(t[5:])
		d.container = strings.Contains(t, "interface") || strings.Contains(t, "struct")
	default:
		u := cutPrefixes(t, "export ", "default ", "declare ", "pub(crate) ", "pub(super) ", "pub ", "public ", "private ",
			"protected ", "internal ", "static ", "final ", "abstract ", "sealed ", "async ", "unsafe ", "extern \"C\" ")
		switch {
		case strings.HasPrefix(u, "type ") && t != u: // TypeScript: export type X = ...
			d.name = ident(u[5:])
		case strings.HasPrefix(u, "def "):
			d.name = ident(u[4:])
		case strings.HasPrefix(u, "class "):
			d.name = ident(u[6:])
			d.container = true
		case strings.HasPrefix(u, "function* "):
			d.name = ident(u[10:])
		case strings.HasPrefix(u, "function "):
			d.name = ident(u[9:])
		case strings.HasPrefix(u, "interface "), strings.HasPrefix(u, "trait "):
			d.name = ident(u[strings.IndexByte(u, ' ')+1:])
			d.container = true
		case strings.HasPrefix(u, "enum "), strings.HasPrefix(u, "struct "), strings.HasPrefix(u, "mod "),
			strings.HasPrefix(u, "union "):
			d.name = ident(u[strings.IndexByte(u, ' ')+1:])
			d.container = strings.HasSuffix(strings.TrimSpace(u), "{")
		case strings.HasPrefix(u, "fn "):
			d.name = ident(u[3:])
		case strings.HasPrefix(u, "const fn "):
			d.name = ident(u[9:])
		case strings.HasPrefix(u, "macro_rules! "):
			d.name = ident(u[13:])
		case strings.HasPrefix(u, "impl"):
			r := strings.TrimSpace(u[4:])
			if strings.HasPrefix(r, "<") {
				if k := strings.IndexByte(r, '>'); k > 0 {
					r = strings.TrimSpace(r[k+1:])
				}
			}
			r = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(r), "{"))
			if r == "" || !(u[4] == ' ' || u[4] == '<') {
				return d, false
			}
			if k := strings.Index(r, " for "); k >= 0 {
				d.name = ident(strings.TrimSpace(r[k+5:]))
				d.qual = ident(r) + " for " + d.name
			} else {
				d.name = ident(r)
			}
			d.container = true
		case strings.HasPrefix(u, "const "), strings.HasPrefix(u, "let "), strings.HasPrefix(u, "var "):
			// JavaScript functions bound to names: const f = (...) => / function
			r := u[strings.IndexByte(u, ' ')+1:]
			name := ident(r)
			rest := strings.TrimSpace(r[len(name):])
			if name == "" || !strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, ":") {
				return d, false
			}
			if !(strings.Contains(rest, "=>") || strings.Contains(rest, "function")) {
				return d, false
			}
			d.name = name
		default:
			return d, false
		}
	}
	if d.name == "" {
		return d, false
	}
	d.title = signature(l)
	return d, true
}

// method recognises a member line inside a JavaScript class: name(args) {.
func method(t string) string {
	u := cutPrefixes(t, "static ", "async ", "get ", "set ", "public ", "private ", "protected ", "readonly ")
	name := ident(u)
	if name == "" || !strings.HasPrefix(u[len(name):], "(") || !strings.HasSuffix(strings.TrimSpace(u), "{") {
		return ""
	}
	switch name {
	case "if", "for", "while", "switch", "catch", "return", "function", "with":
		return ""
	}
	return name
}

func indentOf(l string) int {
	n := 0
	for n < len(l) && (l[n] == ' ' || l[n] == '\t') {
		n++
	}
	return n
}

func isCommentLine(t string) bool {
	for _, p := range []string{"//", "#", "/*", "*", "@", "--"} {
		if strings.HasPrefix(t, p) && !strings.HasPrefix(t, "#!") {
			return true
		}
	}
	return false
}

func (d *doc) parseCode() {
	container := -1 // index of the open top-level container part
	containerIndent := 0
	for i := range d.starts {
		if len(d.parts) >= maxParts {
			break
		}
		l := d.line(i)
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		ind := indentOf(l)
		if container >= 0 && ind <= containerIndent && !strings.HasPrefix(t, "}") && !strings.HasPrefix(t, ")") &&
			!strings.HasPrefix(t, "]") && !isCommentLine(t) {
			container = -1
		}
		def, ok := parseDef(l)
		level := 1
		switch {
		case ok && ind == 0:
		case ok && container >= 0 && ind > containerIndent:
			level = 2
		case !ok && container >= 0 && ind > containerIndent && d.parts[container].title != "" && method(t) != "":
			def = codeDef{name: method(t), title: signature(l)}
			level = 2
		default:
			continue
		}
		if level == 2 && def.qual == "" && container >= 0 {
			def.qual = d.parts[container].names[0] + "." + def.name
		}
		// A definition's doc comment, decorators and attributes belong to it.
		first := i
		for first > 0 {
			pt := strings.TrimSpace(d.line(first - 1))
			if pt == "" || !isCommentLine(pt) || indentOf(d.line(first-1)) != ind {
				break
			}
			first--
		}
		if len(d.parts) > 0 && d.starts[first] < d.parts[len(d.parts)-1].head {
			first = i
		}
		names := []string{strings.ToLower(def.name)}
		if def.qual != "" {
			names = append(names, strings.ToLower(def.qual))
		}
		head := len(d.text)
		if i+1 < len(d.starts) {
			head = d.starts[i+1]
		}
		d.parts = append(d.parts, part{
			title: def.title,
			names: names,
			level: level,
			start: d.starts[first],
			head:  head,
			first: docComment(d, first, i),
		})
		if level == 1 {
			container = -1
			if def.container {
				container = len(d.parts) - 1
				containerIndent = ind
			}
		}
	}
}

// docComment returns the first sentence of the comment on lines [from, def)
// or, for Python, of the docstring after the def line; "" when there is none.
func docComment(d *doc, from, def int) string {
	var b strings.Builder
	for i := from; i < def; i++ {
		t := strings.TrimSpace(d.line(i))
		if strings.HasPrefix(t, "@") || strings.HasPrefix(t, "#[") {
			continue
		}
		t = strings.TrimLeft(t, "/*#!- ")
		t = strings.TrimSuffix(t, "*/")
		b.WriteString(t)
		b.WriteByte(' ')
	}
	if b.Len() == 0 && def+1 < len(d.starts) {
		t := strings.TrimSpace(d.line(def + 1))
		for _, q := range []string{`"""`, `'''`} {
			if strings.HasPrefix(t, q) {
				t = strings.TrimPrefix(t, q)
				if k := strings.Index(t, q); k >= 0 {
					t = t[:k]
				}
				if t == "" && def+2 < len(d.starts) {
					t = strings.TrimSpace(d.line(def + 2))
				}
				b.WriteString(t)
			}
		}
	}
	return firstSentence(b.String())
}

// --- Diffs ---

func (d *doc) parseDiff() {
	file := -1
	hunk := 0
	inHeader := false
	for i := range d.starts {
		if len(d.parts) >= maxParts {
			break
		}
		l := d.line(i)
		switch {
		case strings.HasPrefix(l, "diff --git "):
			p := diffPath(l)
			file = d.addFile(p, i)
			hunk, inHeader = 0, true
		case strings.HasPrefix(l, "--- ") && i+1 < len(d.starts) && strings.HasPrefix(d.line(i+1), "+++ "):
			p := diffSide(d.line(i + 1)[4:])
			if p == "/dev/null" || p == "" {
				p = diffSide(l[4:])
			}
			if inHeader && file >= 0 {
				// The paths of a git header, now exactly.
				d.parts[file].title = p
				d.parts[file].names = pathNames(p)
				continue
			}
			file = d.addFile(p, i)
			hunk = 0
		case strings.HasPrefix(l, "@@") && file >= 0:
			inHeader = false
			hunk++
			fp := d.parts[file].title
			head := len(d.text)
			if i+1 < len(d.starts) {
				head = d.starts[i+1]
			}
			at := l
			d.parts = append(d.parts, part{
				title: fp + "#" + strconv.Itoa(hunk),
				names: []string{strings.ToLower(fp) + "#" + strconv.Itoa(hunk)},
				level: 2,
				start: d.starts[i],
				head:  head,
				first: clip(at, 120),
			})
		case file >= 0 && len(l) > 0 && !inHeader:
			switch l[0] {
			case '+':
				d.parts[file].adds++
			case '-':
				d.parts[file].dels++
			}
		}
	}
	for i := range d.parts {
		p := &d.parts[i]
		if p.level == 1 {
			p.extra = "+" + strconv.Itoa(p.adds) + " -" + strconv.Itoa(p.dels)
		}
	}
}

func (d *doc) addFile(p string, line int) int {
	head := len(d.text)
	if line+1 < len(d.starts) {
		head = d.starts[line+1]
	}
	d.parts = append(d.parts, part{title: p, names: pathNames(p), level: 1, start: d.starts[line], head: head})
	return len(d.parts) - 1
}

func pathNames(p string) []string {
	return []string{strings.ToLower(p)}
}

// diffPath reads the path of a "diff --git a/x b/x" line.
func diffPath(l string) string {
	r := strings.TrimPrefix(l, "diff --git ")
	if i := strings.LastIndex(r, " b/"); i >= 0 {
		return r[i+3:]
	}
	f := strings.Fields(r)
	if len(f) == 0 {
		return "?"
	}
	return diffSide(f[len(f)-1])
}

func diffSide(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i] // a date after the name
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

// --- JSON ---

func (d *doc) parseJSON() {
	if len(d.starts) == 0 {
		return
	}
	top := strings.TrimSpace(d.line(0))
	array := top == "["
	if top != "{" && !array {
		return
	}
	item := 0
	for i := 1; i < len(d.starts); i++ {
		if len(d.parts) >= maxParts {
			break
		}
		l := d.line(i)
		if len(l) < 3 || l[0] != ' ' || l[1] != ' ' || l[2] == ' ' || l[2] == '}' || l[2] == ']' {
			continue
		}
		head := len(d.text)
		if i+1 < len(d.starts) {
			head = d.starts[i+1]
		}
		body := strings.TrimSpace(l)
		var p part
		if array {
			p = part{title: "[" + strconv.Itoa(item) + "]", names: []string{"[" + strconv.Itoa(item) + "]"}}
			item++
		} else {
			key, rest := jsonKey(body)
			p = part{title: strconv.Quote(key), names: []string{strings.ToLower(key)}}
			body = rest
		}
		p.level, p.start, p.head = 1, d.starts[i], head
		p.first = jsonPreview(body)
		d.parts = append(d.parts, p)
	}
	// A member's preview tells how long an object or array is.
	d.closeParts()
	for i := range d.parts {
		p := &d.parts[i]
		if strings.HasSuffix(p.first, "{") || strings.HasSuffix(p.first, "[") {
			n := d.lastLine(p.start, p.end) - d.lineOf(p.start) + 1
			p.first += " … (" + strconv.Itoa(n) + " lines)"
		}
	}
}

func jsonKey(body string) (string, string) {
	if !strings.HasPrefix(body, `"`) {
		return body, ""
	}
	esc := false
	for j := 1; j < len(body); j++ {
		switch {
		case esc:
			esc = false
		case body[j] == '\\':
			esc = true
		case body[j] == '"':
			var k string
			if json.Unmarshal([]byte(body[:j+1]), &k) != nil {
				k = body[1:j]
			}
			return k, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(body[j+1:]), ":"))
		}
	}
	return body, ""
}

func jsonPreview(v string) string {
	v = strings.TrimSuffix(strings.TrimSpace(v), ",")
	return clip(v, 100)
}

// --- File lists ---

func (d *doc) parseFileList() {
	type entry struct {
		path, line string
		at         int
	}
	var es []entry
	dir := ""
	for i := range d.starts {
		if len(d.parts) >= maxParts {
			break
		}
		l := d.line(i)
		t := strings.TrimSpace(l)
		switch {
		case t == "", strings.HasPrefix(t, "total ") && isDigits(strings.TrimSpace(t[6:])):
			continue
		case strings.HasSuffix(t, ":") && !strings.ContainsAny(t, " \t") && lsLong(t) < 0:
			dir = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(t, ":"), "./"), "/")
			if dir == "." {
				dir = ""
			}
			continue
		}
		p, full := t, ""
		if k := lsLong(t); k >= 0 {
			p, full = t[k:], t
			if a := strings.Index(p, " -> "); a >= 0 {
				p = p[:a]
			}
		}
		p = strings.TrimPrefix(p, "./")
		if dir != "" {
			p = dir + "/" + p
		}
		es = append(es, entry{path: p, line: full, at: i})
	}
	// Entries are grouped by their directory, when there is more than one.
	dirOf := func(p string) string {
		if k := strings.LastIndexByte(strings.TrimSuffix(p, "/"), '/'); k >= 0 {
			return p[:k+1]
		}
		return ""
	}
	groups := map[string]bool{}
	for _, e := range es {
		groups[dirOf(e.path)] = true
	}
	grouped := len(groups) > 1
	cur, group := "\x00", -1
	for _, e := range es {
		if len(d.parts) >= maxParts {
			break
		}
		level := 1
		if grouped {
			level = 2
			if g := dirOf(e.path); g != cur {
				cur = g
				title := g
				if g == "" {
					title = "./"
				}
				d.parts = append(d.parts, part{title: title, names: []string{strings.ToLower(strings.TrimSuffix(g, "/"))}, level: 1,
					start: d.starts[e.at], head: d.starts[e.at]})
				group = len(d.parts) - 1
			}
			d.parts[group].adds++ // its entries
		}
		head := len(d.text)
		if e.at+1 < len(d.starts) {
			head = d.starts[e.at+1]
		}
		d.parts = append(d.parts, part{title: e.path, names: []string{strings.ToLower(e.path)}, level: level,
			start: d.starts[e.at], head: head, first: e.line})
	}
}

// --- Plain text ---

// maxParts bounds the parts of one document: an outline shows a budget's
// worth of them at most, and a pathological input (31 MiB of headings) must
// not cost gigabytes. Text after the last part counts with it.
const maxParts = 200000

// textRun is how many lines of text without blank lines make one part.
const textRun = 40

func (d *doc) parseText() {
	inPara := false
	run := 0
	for i := range d.starts {
		if len(d.parts) >= maxParts {
			break
		}
		l := d.line(i)
		if strings.TrimSpace(l) == "" {
			inPara = false
			continue
		}
		if inPara && run < textRun {
			run++
			continue
		}
		inPara, run = true, 1
		d.parts = append(d.parts, part{title: clip(strings.TrimSpace(l), 72), level: 1, start: d.starts[i], head: d.starts[i]})
	}
}

// --- Sentences ---

// firstSentence returns the first sentence of s, at most 200 characters.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '?' || s[i] == '!') && s[i+1] == ' ' && i > 2 {
			s = s[:i+1]
			break
		}
	}
	return clip(s, 200)
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n - len("…")
	for k > 0 && !runeStart(s[k]) {
		k--
	}
	return s[:k] + "…"
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// firstOf returns the summary text of part i: its set first sentence, or the
// first sentence of its body.
func (d *doc) firstOf(i int) string {
	p := &d.parts[i]
	if p.first != "" || d.kind == Code || d.kind == Diff || d.kind == JSON || d.kind == FileList {
		return p.first
	}
	end := p.end
	if i+1 < len(d.parts) && d.parts[i+1].start < end {
		end = d.parts[i+1].start
	}
	body := d.text[min(p.head, end):end]
	if d.kind == Text && body != "" && (body[0] >= '0' && body[0] <= '9' || body[0] == '[') {
		// A log: its first line, not a sentence run over many records.
		if k := strings.IndexByte(body, '\n'); k >= 0 {
			body = body[:k]
		}
		return clip(strings.TrimSpace(body), 200)
	}
	return bodySentence(body)
}

// bodySentence finds the first sentence of a part's body: skipping blank
// lines, fences and markup, up to the first blank line.
func bodySentence(body string) string {
	if len(body) > 4096 {
		body = body[:4096]
	}
	var b strings.Builder
	fence := false
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		if fence || strings.HasPrefix(t, "<!--") || strings.HasPrefix(t, "|") {
			continue
		}
		if t == "" {
			if b.Len() > 0 {
				break
			}
			continue
		}
		t = strings.TrimLeft(t, "-*+> ")
		b.WriteString(t)
		b.WriteByte(' ')
		if strings.ContainsAny(t, ".?!") {
			break
		}
	}
	return firstSentence(b.String())
}
