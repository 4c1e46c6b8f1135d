package fit

import (
	"strings"
	"unicode/utf8"
)

// Info describes a whole document: what an offloaded result's stub says of
// the text it stands for.
type Info struct {
	Kind   Kind `json:"kind"`
	Bytes  int  `json:"size"`   // bytes of UTF-8
	Tokens int  `json:"tokens"` // Count of the text: the tokenizer's estimate
	Weight int  `json:"weight"` // Weigh of the text: what budgets measure
	Lines  int  `json:"lines"`  // lines of its read form (see ReadForm)
}

// Describe tells a document's kind, size, token count, weight and lines.
func Describe(text, name string) Info {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	k := Detect(text, name)
	rf := ReadForm(text, k)
	c, w := Measure(text)
	return Info{Kind: k, Bytes: len(text), Tokens: c, Weight: w, Lines: len(lineStarts(rf))}
}

// Outline returns the outline of text made without a model, in at most
// budget tokens (and CharsPerToken characters a token): each part's title
// with its first sentence when all of that fits, else the titles alone,
// deepest levels dropped first and, when not even the top level fits, the
// first top-level parts with a line saying how many more there are. The same
// text always gives the same outline. It is "" for a text with no parts.
func Outline(text, name string, budget int) string {
	if budget <= 0 {
		return ""
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	f := &fitter{req: Request{Budget: budget, Name: name}, b: boundsOf(Request{Budget: budget})}
	f.orig = text
	f.kind = Detect(text, name)
	d := f.doc()
	if len(d.parts) == 0 {
		return ""
	}
	o := f.outliner(0, len(d.parts), true)
	c := o.choose(0, 0)
	if !c.complete {
		o = f.outliner(0, len(d.parts), false)
		c = o.choose(0, 0)
	}
	var b strings.Builder
	for _, e := range c.shown {
		b.WriteString(e.line)
	}
	if more := o.more(c); more != "" && f.b.fits(b.String()+more) {
		b.WriteString(more)
	}
	return cutChars(b.String(), f.b.chars)
}
