package fit

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The bounds of every fitted answer, whatever its budget.
const (
	// CapTokens is the most tokens (by Weigh) a fitted answer holds.
	CapTokens = 50000
	// CapChars is the most characters (bytes of UTF-8) a fitted answer holds.
	CapChars = 200000
	// CharsPerToken bounds an answer to this many characters per token of
	// its budget, so text the estimate finds cheap cannot flood a context.
	CharsPerToken = 8
)

// View is how much of a document an answer shows.
type View string

// The views, biggest first.
const (
	Full    View = "full"    // the whole text
	Section View = "section" // the whole parts a query names
	Summary View = "summary" // the outline with each part's first sentence
	Stub    View = "stub"    // kind, size and the outline; the floor
)

// Valid reports whether v is a view ("" is not one: it means the biggest
// that fits).
func (v View) Valid() bool {
	switch v {
	case Full, Section, Summary, Stub:
		return true
	}
	return false
}

// rank orders views by size: a fallback only ever goes down.
func (v View) rank() int {
	switch v {
	case Full:
		return 3
	case Section:
		return 2
	case Summary:
		return 1
	}
	return 0
}

// Request says what to cut. The zero Request asks for the biggest view that
// fits the caps.
type Request struct {
	// View is the view asked for; "" means the biggest that fits. A view that
	// does not fit falls to the next smaller one.
	View View
	// Budget is the most tokens the answer may take; 0 or less means none
	// (the caps still hold).
	Budget int
	// Query names a section: a heading, a definition's name, a path,
	// "<path>#<n>" for a diff's n-th hunk of that path, a line range
	// ("120-180"), a JSON top-level key or an item ("[3]").
	Query string
	// Chars is a bound of the caller's own in characters; 0 means none.
	Chars int
	// Name is the document's name (a file name, a path, a URL), used to
	// tell its kind and to name it in the answer; "" when it has none.
	Name string
}

// Note is the fit note every fitted answer carries.
type Note struct {
	View    View   `json:"view"`
	Budget  int    `json:"budget"`            // the token bound applied
	Size    int    `json:"size"`              // the whole document's weight (Weigh)
	Tokens  int    `json:"tokens"`            // the answer's weight (Weigh), what its budget measures
	Omitted string `json:"omitted,omitempty"` // one sentence: what was left out, how to get it
}

// Result is a fitted answer.
type Result struct {
	Text string // what the model reads
	Note Note   // what was cut and why
	Kind Kind   // what the document was read as
}

// Wanted reports whether a call asked for fitting at all: a call with no
// view, no budget and no query is answered as it would be without fitting.
func Wanted(view View, budget int, query string) bool {
	return view != "" || budget != 0 || strings.TrimSpace(query) != ""
}

// The numbers of the default budget.
const (
	contextTokens = 128000
	minBudget     = 500
	maxBudget     = 8000
)

// DefaultBudget is the budget given to a call that names none: a quarter of
// what is left of a 128,000-token context after used tokens (the newest
// request and its answer), at least 500 and at most 8,000, and half of that
// once the job has spent its warning share of budget (warned).
func DefaultBudget(used int, warned bool) int {
	if used < 0 {
		used = 0
	}
	b := (contextTokens - used) / 4
	b = max(minBudget, min(maxBudget, b))
	if warned {
		b /= 2
	}
	return b
}

// bounds are the limits one answer must keep.
type bounds struct {
	tokens int // the token budget (CapTokens when none was given)
	chars  int // the character bound, hard
	given  bool
}

func boundsOf(r Request) bounds {
	b := bounds{tokens: CapTokens, chars: CapChars}
	if r.Budget > 0 {
		b.given = true
		b.tokens = min(b.tokens, r.Budget)
		b.chars = min(b.chars, r.Budget*CharsPerToken)
	}
	if r.Chars > 0 {
		b.chars = min(b.chars, r.Chars)
	}
	return b
}

func (b bounds) fits(s string) bool {
	return len(s) <= b.chars && Weigh(s) <= b.tokens
}

// fitsWeighed is fits for a text whose weight is known.
func (b bounds) fitsWeighed(s string, tokens int) bool {
	return len(s) <= b.chars && tokens <= b.tokens
}

// Fit cuts text to the view r asks for, or to the biggest view that fits,
// within r's budget and the caps. It never fails: bad input (empty, binary,
// invalid UTF-8, a query naming nothing, any budget) gets a defined answer
// whose note says what happened.
func Fit(text string, r Request) Result {
	b := boundsOf(r)
	f := &fitter{req: r, b: b, query: strings.TrimSpace(r.Query)}
	res := f.fit(text)
	res.Text = cutChars(res.Text, b.chars)
	res.Note.Budget = b.tokens
	res.Note.Tokens = Weigh(res.Text)
	return res
}

type fitter struct {
	req   Request
	b     bounds
	query string

	name string
	kind Kind
	orig string // the text, valid UTF-8
	size int    // Weigh(orig)
	d    *doc   // parsed on first use
	warn string // a sentence about the input (invalid UTF-8), or ""
	miss string // a sentence about a query that named nothing, or ""
}

func (f *fitter) doc() *doc {
	if f.d == nil {
		f.d = parse(ReadForm(f.orig, f.kind), f.kind)
	}
	return f.d
}

// prepare reads text: its kind and size. It returns the answer for binary
// data, which has no views.
func (f *fitter) prepare(text string) (Result, bool) {
	f.name = strings.TrimSpace(f.req.Name)
	if isBinary(text) {
		return f.binary(text), true
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
		f.warn = "The text was not valid UTF-8; invalid bytes are shown as \uFFFD."
	}
	f.orig = text
	f.kind = Detect(text, f.name)
	if f.kind == JSON {
		f.size = Weigh(text)
	} else {
		f.size = milliToTokens(f.doc().total())
	}
	return Result{}, false
}

// floorOf is the smallest answer Fit gives for text: the compact stub. A
// budget of at least its weight is always kept.
func floorOf(text string, r Request) string {
	f := &fitter{req: r, b: boundsOf(r), query: strings.TrimSpace(r.Query)}
	if res, done := f.prepare(text); done {
		return res.Text
	}
	return f.floor()
}

func (f *fitter) fit(text string) Result {
	if res, done := f.prepare(text); done {
		return res
	}

	want := f.req.View
	if !want.Valid() {
		if want != "" {
			f.warn = joinSentences(f.warn, fmt.Sprintf("There is no view %q (views: stub, summary, section, full).", string(want)))
		}
		want = ""
	}
	start := want
	if start == "" {
		start = Full
	}
	var sel *selection
	if f.query != "" {
		s, ok := f.doc().find(f.query)
		if ok {
			sel = &s
		} else {
			f.miss = fmt.Sprintf("The query %q names nothing in this %s (ask for %s).", f.query, f.noun(), queryForms(f.kind))
		}
	}
	// Full.
	if start == Full {
		if f.b.fitsWeighed(f.orig, f.size) {
			return f.result(Full, f.orig, f.warn)
		}
		start = Section
	}
	// Section.
	if start == Section {
		switch {
		case sel != nil:
			if res, ok := f.section(sel); ok {
				return res
			}
		case f.query == "" && want == Section:
			f.miss = fmt.Sprintf("View section needs a query: %s.", queryForms(f.kind))
		}
		start = Summary
	}
	// Summary, of the part the query named when there is one.
	scope := -1
	if sel != nil && sel.part >= 0 {
		scope = sel.part
	}
	if start == Summary {
		if res, ok := f.outlineView(Summary, scope, sel); ok {
			return res
		}
	}
	res, _ := f.outlineView(Stub, scope, sel)
	return res
}

// joinSentences joins two clauses into the one sentence a note's omitted
// field holds.
func joinSentences(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	if b[0] >= 'A' && b[0] <= 'Z' && !(len(b) > 1 && b[1] >= 'A' && b[1] <= 'Z') {
		b = string(b[0]-'A'+'a') + b[1:]
	}
	return strings.TrimSuffix(a, ".") + "; " + b
}

// result builds an answer; omitted is the note's sentence.
func (f *fitter) result(v View, text, omitted string) Result {
	return Result{Text: text, Kind: f.kind, Note: Note{View: v, Size: f.size, Omitted: joinSentences(f.miss, omitted)}}
}

func (f *fitter) noun() string {
	switch f.kind {
	case Markdown:
		return "Markdown document"
	case Code:
		return "source file"
	case Diff:
		return "diff"
	case JSON:
		return "JSON document"
	case FileList:
		return "file list"
	}
	return "text"
}

// queryForms names the queries that select a section of a kind.
func queryForms(k Kind) string {
	switch k {
	case Markdown:
		return `a heading or a line range such as "120-180"`
	case Code:
		return `a definition's name (function, type, class) or a line range such as "120-180"`
	case Diff:
		return `a path, "<path>#<n>" for its n-th hunk, or a line range such as "120-180"`
	case JSON:
		return `a top-level key, an item such as "[3]", or a line range such as "120-180"`
	case FileList:
		return `a path or a line range such as "120-180"`
	}
	return `a line range such as "120-180"`
}

// describe is the one-line description of the whole document.
func (f *fitter) describe() string {
	var b strings.Builder
	if f.name != "" {
		b.WriteString(f.name)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%s, %d lines, %d tokens, %d bytes", f.noun(), f.doc().lines(), f.size, len(f.orig))
	return b.String()
}

// section answers with the selected parts, or with as many whole lines of a
// line range as fit.
func (f *fitter) section(sel *selection) (Result, bool) {
	d := f.doc()
	text := sel.text(d)
	if f.b.fits(text) {
		rest := f.size - Weigh(text)
		return f.result(Section, text, fmt.Sprintf("This is %s; the rest of the %s (%d tokens, %d lines) was left out: ask view section with another query (%s), or view full.",
			sel.label, f.noun(), max(rest, 0), d.lines(), queryForms(f.kind))), true
	}
	if !sel.isRange {
		return Result{}, false
	}
	// Whole lines of the range, as many as fit.
	lo := sel.from
	hi := f.linesThatFit(lo, sel.to)
	if hi < lo {
		return Result{}, false
	}
	text = d.text[d.starts[lo-1]:d.lineEnd(hi)]
	return f.result(Section, text, fmt.Sprintf("These are lines %d-%d of the range %d-%d asked for (the %s has %d lines); the rest did not fit the bound of %s: ask for lines %d-%d next.",
		lo, hi, sel.from, sel.to, f.noun(), d.lines(), f.boundName(), hi+1, sel.to)), true
}

// boundName says which bound limits answers.
func (f *fitter) boundName() string {
	if f.req.Chars > 0 && f.b.chars == f.req.Chars {
		return fmt.Sprintf("%d characters", f.b.chars)
	}
	if f.b.given {
		return fmt.Sprintf("%d tokens", f.b.tokens)
	}
	return fmt.Sprintf("%d tokens (the cap)", f.b.tokens)
}

// lineEnd is the byte offset just after line n (1-based), its line break
// included.
func (d *doc) lineEnd(n int) int {
	if n < len(d.starts) {
		return d.starts[n]
	}
	return len(d.text)
}

// linesThatFit returns the last line of lo..to that keeps lo..that line
// within the bounds, or lo-1 when not even line lo fits.
func (f *fitter) linesThatFit(lo, to int) int {
	d := f.doc()
	var m int64
	start := d.starts[lo-1]
	best := lo - 1
	for n := lo; n <= to; n++ {
		m += weighMilli(d.text[d.starts[n-1]:d.lineEnd(n)], nil)
		if d.lineEnd(n)-start > f.b.chars || milliToTokens(m) > f.b.tokens {
			break
		}
		best = n
	}
	return best
}

// cutChars cuts s to at most n bytes at a line break or, failing that, a
// rune boundary. It is the last guard of the hard character bounds.
func cutChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	k := n
	for k > 0 && !runeStart(s[k]) {
		k--
	}
	if j := strings.LastIndexByte(s[:k], '\n'); j > k/2 {
		return s[:j+1]
	}
	return s[:k]
}

// isBinary reports whether text is data rather than text: NUL bytes, or
// mostly control bytes and invalid UTF-8 in its first 8 KiB.
func isBinary(text string) bool {
	head := text
	if len(head) > 8192 {
		head = head[:8192]
	}
	if strings.IndexByte(head, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(head); {
		r, w := utf8.DecodeRuneInString(head[i:])
		if (r == utf8.RuneError && w == 1 && len(head)-i >= utf8.UTFMax) || (r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f' && r != 0x1b) {
			bad++
		}
		i += w
	}
	return bad*10 > len(head)
}

func (f *fitter) binary(text string) Result {
	f.kind = Text
	f.size = Weigh(strings.ToValidUTF8(text, "\uFFFD"))
	var b strings.Builder
	if f.name != "" {
		b.WriteString(f.name + ": ")
	}
	fmt.Fprintf(&b, "binary data, %d bytes (about %d tokens as text); not shown.\n", len(text), f.size)
	return f.result(Stub, b.String(), "The content is binary data, so only its size is shown; there are no parts to ask for.")
}

// --- Outline views ---

// entry is one line of an outline.
type entry struct {
	part  int
	level int
	line  string
	cost  int64 // thousandths of a token, line break included
}

// outlineView renders the stub or the summary of the part scope (-1: the
// whole document) within the bounds. The stub always answers.
func (f *fitter) outlineView(v View, scope int, sel *selection) (Result, bool) {
	d := f.doc()
	lo, hi := f.scopeRange(scope)
	head := f.describe()
	if scope >= 0 {
		p := d.parts[scope]
		head = fmt.Sprintf("%s (%s, %d tokens) of %s", p.title, lineSpan(d.lineOf(p.start), d.lastLine(p.start, p.end)), d.tokensOf(scope), head)
	}
	what := "Outline"
	if v == Summary {
		what = "Outline with each part's first sentence"
	}
	header := head + ". " + what + ":\n"
	footer := f.howToAsk(v)
	fixedCost := weighMilli(header, nil) + weighMilli(footer, nil)
	fixedChars := len(header) + len(footer)

	o := f.outliner(lo, hi, v == Summary)
	c := o.choose(fixedCost, fixedChars)
	if v == Summary && !c.complete {
		// A summary that leaves parts out falls to the stub, which lists
		// more of them in the same room. (Were a partial summary allowed, a
		// smaller budget could give a summary where a bigger one gave a stub.)
		return Result{}, false
	}
	if len(c.shown) == 0 {
		header = head + ".\n" // no outline fits: the size and how to ask
	}
	var b strings.Builder
	b.WriteString(header)
	for _, e := range c.shown {
		b.WriteString(e.line)
	}
	if more := o.more(c); more != "" && f.b.fits(b.String()+more+footer) {
		b.WriteString(more)
	}
	b.WriteString(footer)
	text := b.String()
	floor := false
	if !f.b.fits(text) {
		if v == Summary {
			return Result{}, false
		}
		text, floor = f.floor(), true
	}
	return f.result(v, text, f.omittedOutline(v, scope, c, sel, floor)), true
}

// scopeRange is the range of parts the outline of scope lists: all parts,
// or the sub-parts of part scope (or scope itself when it has none).
func (f *fitter) scopeRange(scope int) (int, int) {
	d := f.doc()
	if scope < 0 {
		return 0, len(d.parts)
	}
	lo, hi := scope+1, scope+1
	for hi < len(d.parts) && d.parts[hi].start < d.parts[scope].end {
		hi++
	}
	if lo == hi {
		lo = scope
	}
	return lo, hi
}

// floor is the smallest stub: what the document is and how to ask for more.
func (f *fitter) floor() string {
	prefix := ""
	if f.name != "" {
		prefix = f.name + ": "
	}
	return fmt.Sprintf("%s%s, %d tokens: ask view section with query %s, or a bigger budget.\n",
		prefix, f.noun(), f.size, queryForms(f.kind))
}

// howToAsk is the last line of a stub or summary.
func (f *fitter) howToAsk(v View) string {
	var b strings.Builder
	b.WriteString("To read more, ask view \"section\" with query " + queryForms(f.kind))
	if v == Stub {
		b.WriteString(`, view "summary" (first sentences)`)
	}
	fmt.Fprintf(&b, ` or view "full" (%d tokens).`+"\n", f.size)
	return b.String()
}

// outliner makes the outline lines of parts lo..hi, only as many as are
// looked at: an outline shows at most a budget's worth of them, so a
// document with a hundred thousand headings costs no more than one with a
// hundred.
type outliner struct {
	f         *fitter
	lo, hi    int
	withFirst bool
	top       int     // the smallest level in the range
	maxLevel  int     // the deepest, relative to top (1 is the top)
	pre       *entry  // the text before the first part, when it is listed
	cache     []entry // by part index - lo; line == "" until made
}

func (f *fitter) outliner(lo, hi int, withFirst bool) *outliner {
	d := f.doc()
	o := &outliner{f: f, lo: lo, hi: hi, withFirst: withFirst, top: 99, maxLevel: 1, cache: make([]entry, hi-lo)}
	for i := lo; i < hi; i++ {
		o.top = min(o.top, d.parts[i].level)
	}
	for i := lo; i < hi; i++ {
		o.maxLevel = max(o.maxLevel, d.parts[i].level-o.top+1)
	}
	if lo == 0 && hi > 0 && d.parts[0].start > 0 && f.kind != JSON && strings.TrimSpace(d.text[:d.parts[0].start]) != "" {
		line := fmt.Sprintf("(top, %s)", lineSpan(1, d.lineOf(d.parts[0].start-1)))
		if withFirst {
			if s := bodySentence(d.text[:d.parts[0].start]); s != "" {
				line += ": " + s
			}
		}
		line += "\n"
		o.pre = &entry{part: -1, level: 1, line: line, cost: weighMilli(line, nil)}
	}
	return o
}

func (o *outliner) level(i int) int { return o.f.d.parts[i].level - o.top + 1 }

// entry makes (once) the outline line of part i.
func (o *outliner) entry(i int) entry {
	e := &o.cache[i-o.lo]
	if e.line != "" {
		return *e
	}
	f, d := o.f, o.f.d
	p := &d.parts[i]
	level := o.level(i)
	var b strings.Builder
	if f.kind != Markdown {
		for k := 1; k < level; k++ {
			b.WriteString("  ")
		}
	}
	from, to := d.lineOf(p.start), d.lastLine(p.start, p.end)
	if f.kind == Text {
		// A paragraph or a run of lines has no title: its lines name it,
		// then its beginning (stub) or its first sentence (summary).
		fmt.Fprintf(&b, "%s (%d tokens): ", lineSpan(from, to), d.tokensOf(i))
		if o.withFirst {
			b.WriteString(d.firstOf(i))
		} else {
			b.WriteString(p.title)
		}
		b.WriteByte('\n')
		line := b.String()
		*e = entry{part: i, level: level, line: line, cost: weighMilli(line, nil)}
		return *e
	}
	b.WriteString(p.title)
	switch {
	case f.kind == FileList && (p.first != "" || level > 1):
		// One line each: the line number is enough.
		fmt.Fprintf(&b, " (line %d)", from)
	case f.kind == FileList:
		noun := "entries"
		if p.adds == 1 {
			noun = "entry"
		}
		fmt.Fprintf(&b, " (%d %s, %s)", p.adds, noun, lineSpan(from, to))
	case p.extra != "":
		fmt.Fprintf(&b, " (%s, %s, %d tokens)", p.extra, lineSpan(from, to), d.tokensOf(i))
	default:
		fmt.Fprintf(&b, " (%s, %d tokens)", lineSpan(from, to), d.tokensOf(i))
	}
	if o.withFirst {
		if s := d.firstOf(i); s != "" {
			b.WriteString(": ")
			b.WriteString(s)
		}
	}
	b.WriteByte('\n')
	line := b.String()
	*e = entry{part: i, level: level, line: line, cost: weighMilli(line, nil)}
	return *e
}

// chosen is an outline that fits: the entries shown, the deepest level
// listed whole, whether every part down to that level is listed, and how
// many parts there are down to that level.
type chosen struct {
	shown    []entry
	depth    int
	complete bool
	listed   int
	next     int // the first part left out, -1 for none
}

// choose picks the deepest outline that fits beside fixed text, or, when not
// even the top level fits, as many top-level entries as fit.
func (o *outliner) choose(fixedCost int64, fixedChars int) chosen {
	f := o.f
	tokLimit := int64(f.b.tokens)*1000 - fixedCost
	charLimit := f.b.chars - fixedChars
	var sumC int64
	sumN := 0
	if o.pre != nil {
		sumC, sumN = o.pre.cost, len(o.pre.line)
	}
	depth := 0
	for lv := 1; lv <= o.maxLevel; lv++ {
		c, n, ok := sumC, sumN, true
		for i := o.lo; i < o.hi && ok; i++ {
			if o.level(i) != lv {
				continue
			}
			e := o.entry(i)
			c += e.cost
			n += len(e.line)
			ok = c <= tokLimit && n <= charLimit
		}
		if !ok {
			break
		}
		sumC, sumN, depth = c, n, lv
	}
	// The first level with more than one part: a summary that lists only a
	// document's title says nothing.
	branch := 1
	for ; branch < o.maxLevel; branch++ {
		n := 0
		if o.pre != nil {
			n++
		}
		for i := o.lo; i < o.hi && n < 2; i++ {
			if o.level(i) <= branch {
				n++
			}
		}
		if n > 1 {
			break
		}
	}
	var out []entry
	if o.pre != nil {
		out = append(out, *o.pre)
	}
	if depth >= branch {
		for i := o.lo; i < o.hi; i++ {
			if o.level(i) <= depth {
				out = append(out, o.entry(i))
			}
		}
		return chosen{shown: out, depth: depth, complete: true, listed: len(out), next: -1}
	}
	// Not even the first level that branches: its first entries, leaving
	// room for the line that says how many were left out.
	tokLimit -= 15000
	charLimit -= 80
	listed, next := len(out), -1
	if o.pre != nil {
		sumC, sumN = o.pre.cost, len(o.pre.line)
	} else {
		sumC, sumN = 0, 0
	}
	for i := o.lo; i < o.hi; i++ {
		if o.level(i) > branch {
			continue
		}
		listed++
		if sumC < 0 {
			continue
		}
		e := o.entry(i)
		if sumC+e.cost > tokLimit || sumN+len(e.line) > charLimit {
			sumC, next = -1, i // full: count the rest only
			continue
		}
		sumC += e.cost
		sumN += len(e.line)
		out = append(out, e)
	}
	return chosen{shown: out, depth: branch, listed: listed, next: next}
}

// more is the line that says what an outline cut short left out, or "".
func (o *outliner) more(c chosen) string {
	left := c.listed - len(c.shown)
	if left <= 0 || c.next < 0 {
		return ""
	}
	from := o.f.d.lineOf(o.f.d.parts[c.next].start)
	return fmt.Sprintf("… %d more parts from line %d on are not listed.\n", left, from)
}

// omittedOutline is the note's sentence for a stub or a summary.
func (f *fitter) omittedOutline(v View, scope int, c chosen, sel *selection, floor bool) string {
	d := f.doc()
	var b strings.Builder
	size := f.size
	if scope >= 0 {
		size = d.tokensOf(scope)
		fmt.Fprintf(&b, "%s is %d tokens", capitalize(sel.label), size)
	} else {
		fmt.Fprintf(&b, "The whole %s is %d tokens", f.noun(), f.size)
	}
	if size > f.b.tokens || (scope < 0 && len(f.orig) > f.b.chars) {
		fmt.Fprintf(&b, ", over the bound of %s", f.boundName())
	}
	switch {
	case floor:
		b.WriteString("; not even its outline fits, so only its size is shown")
	case v == Summary:
		b.WriteString("; this summary shows its outline with each part's first sentence")
	default:
		b.WriteString("; this stub shows its outline only")
	}
	if !floor && len(c.shown) < c.listed {
		fmt.Fprintf(&b, " (the first %d of %d parts)", len(c.shown), c.listed)
	}
	fmt.Fprintf(&b, ": ask view section with query %s", queryForms(f.kind))
	switch {
	case floor:
		b.WriteString(", or a bigger budget")
	case v == Stub:
		b.WriteString(", or view summary")
	}
	b.WriteString(".")
	return joinSentences(f.warn, b.String())
}

// lineSpan says "line 7" or "lines 7-12".
func lineSpan(from, to int) string {
	if from == to {
		return "line " + strconv.Itoa(from)
	}
	return "lines " + strconv.Itoa(from) + "-" + strconv.Itoa(to)
}

// quoteTitle quotes a part's title unless it is quoted already (a JSON key)
// or an item ([3]).
func quoteTitle(t string) string {
	if strings.HasPrefix(t, `"`) || strings.HasPrefix(t, "[") {
		return t
	}
	return strconv.Quote(t)
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// --- Queries ---

// span is a byte range of the read form.
type span struct{ start, end int }

// selection is what a query named.
type selection struct {
	spans    []span
	label    string // "the section \"## Install\""
	part     int    // the one part named, or -1
	isRange  bool
	from, to int // a line range, 1-based, inclusive
}

func (s *selection) text(d *doc) string {
	if len(s.spans) == 1 {
		return d.text[s.spans[0].start:s.spans[0].end]
	}
	var b strings.Builder
	for _, sp := range s.spans {
		b.WriteString(d.text[sp.start:sp.end])
	}
	return b.String()
}

// parseRange reads "120-180", "120:180", "L120-L180", "120-" and "120".
func parseRange(q string) (from, to int, ok bool) {
	q = strings.ReplaceAll(q, " ", "")
	a, bs, two := strings.Cut(q, "-")
	if !two {
		a, bs, two = strings.Cut(q, ":")
	}
	a = strings.TrimPrefix(strings.TrimPrefix(a, "L"), "l")
	bs = strings.TrimPrefix(strings.TrimPrefix(bs, "L"), "l")
	from, err := strconv.Atoi(a)
	if err != nil || from < 1 || !isDigits(a) {
		return 0, 0, false
	}
	switch {
	case !two:
		return from, from, true
	case bs == "":
		return from, int(^uint(0) >> 1), true
	}
	to, err = strconv.Atoi(bs)
	if err != nil || !isDigits(bs) || to < from {
		return 0, 0, false
	}
	return from, to, true
}

// find resolves a query to a selection.
func (d *doc) find(q string) (selection, bool) {
	if from, to, ok := parseRange(q); ok {
		if from > d.lines() {
			return selection{}, false
		}
		to = min(to, d.lines())
		return selection{spans: []span{{d.starts[from-1], d.lineEnd(to)}}, part: -1, isRange: true, from: from, to: to,
			label: lineSpan(from, to)}, true
	}
	lq := strings.ToLower(strings.TrimSpace(q))
	switch d.kind {
	case Markdown:
		lq = strings.TrimSpace(strings.TrimLeft(lq, "#"))
	case JSON:
		lq = strings.TrimPrefix(strings.TrimPrefix(lq, "$"), ".")
		if uq, err := strconv.Unquote(q); err == nil {
			lq = strings.ToLower(uq)
		}
	case Code:
		for _, kw := range []string{"func ", "def ", "class ", "type ", "fn ", "function ", "struct ", "trait ", "impl ", "interface "} {
			lq = strings.TrimSpace(strings.TrimPrefix(lq, kw))
		}
		lq = strings.TrimSuffix(lq, "()")
		// Go's method forms: (*T).M and (T).M are T.M.
		if strings.HasPrefix(lq, "(") {
			lq = strings.NewReplacer("(", "", ")", "", "*", "").Replace(lq)
		}
	case Diff, FileList:
		lq = strings.TrimPrefix(lq, "./")
		if strings.HasPrefix(lq, "a/") || strings.HasPrefix(lq, "b/") {
			lq = lq[2:]
		}
	}
	if lq == "" {
		return selection{}, false
	}
	if d.kind == Diff {
		if i := strings.LastIndexByte(lq, '#'); i > 0 && isDigits(lq[i+1:]) {
			return d.findHunk(lq[:i], lq[i+1:])
		}
	}
	// Exact names first, in document order.
	for i := range d.parts {
		if d.kind == Markdown {
			h := headingText(d.parts[i].title)
			if strings.EqualFold(h, lq) || slug(h) == lq {
				return d.partSelection(i), true
			}
			continue
		}
		for _, n := range d.parts[i].names {
			if n == lq {
				return d.partSelection(i), true
			}
		}
	}
	if d.kind == Diff || d.kind == FileList {
		if s, ok := d.findPath(lq); ok {
			return s, true
		}
	}
	// Then a title that holds the query.
	for i := range d.parts {
		if strings.Contains(strings.ToLower(d.parts[i].title), lq) {
			return d.partSelection(i), true
		}
	}
	return selection{}, false
}

func (d *doc) partSelection(i int) selection {
	p := d.parts[i]
	return selection{spans: []span{{p.start, p.end}}, part: i,
		label: fmt.Sprintf("the part %s (%s)", quoteTitle(p.title), lineSpan(d.lineOf(p.start), d.lastLine(p.start, p.end)))}
}

// findPath selects every file or entry under a directory, or the one path
// the query ends.
func (d *doc) findPath(lq string) (selection, bool) {
	dir := strings.TrimSuffix(lq, "/") + "/"
	var s selection
	s.part = -1
	for i := range d.parts {
		p := d.parts[i]
		if p.level != 1 && d.kind == Diff {
			continue
		}
		if d.kind == FileList && i+1 < len(d.parts) && d.parts[i+1].start == p.start {
			continue // a directory group; its entries are listed one by one
		}
		if strings.HasPrefix(p.names[0], dir) {
			if n := len(s.spans); n > 0 && s.spans[n-1].end == p.start {
				s.spans[n-1].end = p.end
			} else {
				s.spans = append(s.spans, span{p.start, p.end})
			}
		}
	}
	if len(s.spans) > 0 {
		s.label = fmt.Sprintf("everything under %q", dir)
		return s, true
	}
	for i := range d.parts {
		if strings.HasSuffix(d.parts[i].names[0], "/"+lq) {
			return d.partSelection(i), true
		}
	}
	return selection{}, false
}

// findHunk selects a diff's n-th hunk of a path with the file's header.
func (d *doc) findHunk(path, n string) (selection, bool) {
	for i := range d.parts {
		p := d.parts[i]
		if p.level != 1 || !(p.names[0] == path || strings.HasSuffix(p.names[0], "/"+path)) {
			continue
		}
		want := p.names[0] + "#" + n
		for j := i + 1; j < len(d.parts) && d.parts[j].start < p.end; j++ {
			if d.parts[j].names[0] == want {
				h := d.parts[j]
				return selection{spans: []span{{p.start, d.parts[i+1].start}, {h.start, h.end}}, part: j,
					label: fmt.Sprintf("hunk %s of %s (%s)", n, p.title, lineSpan(d.lineOf(h.start), d.lastLine(h.start, h.end)))}, true
			}
		}
	}
	return selection{}, false
}
