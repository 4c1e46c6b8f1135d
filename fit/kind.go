package fit

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"
)

// Kind is what a document is read as: it decides its parts, its outline and
// the queries that name a section of it.
type Kind string

// The kinds of document.
const (
	Markdown Kind = "markdown" // parts are headings
	Code     Kind = "code"     // parts are definitions: functions, types, classes
	Diff     Kind = "diff"     // parts are files, and their hunks
	JSON     Kind = "json"     // parts are top-level keys or items
	FileList Kind = "filelist" // parts are directories, and their entries
	Text     Kind = "text"     // parts are paragraphs, or runs of lines
)

// sniffLen is how much of a document kind detection looks at; the kind of a
// 31 MiB answer is decided by its beginning, so detection costs the same for
// every size.
const sniffLen = 64 << 10

var codeExt = map[string]bool{
	".go": true, ".py": true, ".pyi": true, ".js": true, ".mjs": true, ".cjs": true, ".jsx": true,
	".ts": true, ".tsx": true, ".mts": true, ".rs": true, ".java": true, ".kt": true, ".c": true,
	".h": true, ".cc": true, ".cpp": true, ".hpp": true, ".rb": true, ".swift": true, ".scala": true,
	".cs": true, ".php": true, ".sh": true, ".bash": true, ".lua": true,
}

// Detect tells what kind of document text is, from its content and, when
// given, its name (a file name, a path or a URL). A name's extension wins
// when the content agrees or says nothing against it.
func Detect(text, name string) Kind {
	ext := strings.ToLower(path.Ext(strings.TrimRight(name, "/")))
	head := text
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	switch {
	case ext == ".json" || ext == ".ipynb":
		if isJSON(text) {
			return JSON
		}
		return Text
	case ext == ".md" || ext == ".markdown" || ext == ".mdx":
		return Markdown
	case ext == ".diff" || ext == ".patch":
		return Diff
	case codeExt[ext]:
		return Code
	case ext == ".yaml" || ext == ".yml" || ext == ".toml" || ext == ".ini" || ext == ".cfg" || ext == ".conf" || ext == ".log":
		// Their "# comments" are not headings.
		return Text
	}
	t := strings.TrimLeft(head, " \t\r\n\ufeff")
	if t == "" {
		return Text
	}
	if (t[0] == '{' || t[0] == '[') && isJSON(text) {
		return JSON
	}
	if strings.HasPrefix(t, "#!") {
		return Code // a script
	}
	lines := strings.Split(head, "\n")
	if len(text) > len(head) && len(lines) > 1 {
		lines = lines[:len(lines)-1] // the last may be cut
	}
	if looksLikeDiff(lines) {
		return Diff
	}
	if looksLikeFileList(lines) {
		return FileList
	}
	defs, headings, fences, codeish, nonBlank := 0, 0, 0, 0, 0
	inFence := false
	for _, l := range lines {
		tl := strings.TrimSpace(l)
		if tl == "" {
			continue
		}
		nonBlank++
		if strings.HasPrefix(tl, "```") || strings.HasPrefix(tl, "~~~") {
			fences++
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if _, ok := atxHeading(l); ok {
			headings++
		}
		if _, _, ok := definition(l); ok {
			defs++
		}
		switch tl[len(tl)-1] {
		case '{', '}', ';', ')':
			codeish++
		}
	}
	switch {
	case headings > 0 && (fences > 0 || headings*4 >= defs*5) && codeish*3 < nonBlank:
		return Markdown
	case defs >= 2 || (defs >= 1 && codeish*4 >= nonBlank):
		return Code
	case headings > 0 && defs == 0:
		return Markdown
	}
	return Text
}

func isJSON(text string) bool {
	t := strings.TrimSpace(text)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return false
	}
	return json.Valid([]byte(t))
}

func looksLikeDiff(lines []string) bool {
	for i, l := range lines {
		if strings.HasPrefix(l, "diff --git ") {
			return true
		}
		if strings.HasPrefix(l, "--- ") && i+2 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") && strings.HasPrefix(lines[i+2], "@@ ") {
			return true
		}
	}
	return false
}

// looksLikeFileList reports whether nearly every line is a path or a line of
// `ls -l`.
func looksLikeFileList(lines []string) bool {
	entries, other := 0, 0
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
		case strings.HasPrefix(t, "total ") && isDigits(strings.TrimSpace(t[6:])):
		case lsLong(t) >= 0:
			entries++
		case strings.HasSuffix(t, ":") && !strings.ContainsAny(t, " \t"):
			// a directory header of ls -R
		case !strings.ContainsAny(t, " \t") && !strings.ContainsAny(t, "{}()<>;=\"'`,") && len(t) < 512 && (strings.ContainsAny(t, "/.") || len(t) < 40):
			entries++
		default:
			other++
		}
	}
	return entries >= 3 && other*20 <= entries
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// lsLong returns where the name begins in a line of `ls -l`, or -1.
func lsLong(t string) int {
	if len(t) < 11 {
		return -1
	}
	if !strings.ContainsRune("-dlcbpsD", rune(t[0])) {
		return -1
	}
	for i := 1; i < 10; i++ {
		if !strings.ContainsRune("rwxsStTl-", rune(t[i])) {
			return -1
		}
	}
	// perms links owner group size month day time|year name
	i, field := 0, 0
	for field < 8 {
		for i < len(t) && t[i] != ' ' && t[i] != '\t' {
			i++
		}
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		field++
		if i >= len(t) {
			return -1
		}
	}
	return i
}

// ReadForm returns the line form text is read in for its kind: a JSON value
// with one indented line per value (so line ranges mean something even when
// it came on one line), any other kind as it is. Line ranges in queries and
// in outlines count lines of this form.
func ReadForm(text string, kind Kind) string {
	if kind != JSON {
		return text
	}
	t := strings.TrimSpace(text)
	if jsonDepth(t) > maxIndentDepth {
		// Indenting deep nesting costs its depth on every line: a few
		// kilobytes of brackets would become many megabytes.
		return text
	}
	var b bytes.Buffer
	b.Grow(len(t) + len(t)/4)
	if err := json.Indent(&b, []byte(t), "", "  "); err != nil {
		return text
	}
	b.WriteByte('\n')
	return b.String()
}

// maxIndentDepth is the deepest JSON ReadForm indents.
const maxIndentDepth = 64

// jsonDepth returns the deepest nesting of brackets in JSON text, outside
// strings.
func jsonDepth(t string) int {
	depth, deepest := 0, 0
	in, esc := false, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
