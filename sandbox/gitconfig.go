package sandbox

import (
	"fmt"
	"strings"
)

// gitVar is one variable of a git config file: section and key lowercased,
// the subsection as written.
type gitVar struct {
	section, sub, key, value string
}

// name is the variable's dotted name ("includeif.gitdir:/x/.path" keeps the
// subsection's case).
func (v gitVar) name() string {
	if v.sub == "" {
		return v.section + "." + v.key
	}
	return v.section + "." + v.sub + "." + v.key
}

// parseGitConfig reads git's config format: [section], [section "sub"],
// the old [section.sub], key = value with quotes, escapes, comments and
// continued lines, and a bare key (true). It is strict where git is:
// what git would refuse to read is an error here too, so nothing git acts
// on is missed by a lenient reading.
func parseGitConfig(data string) ([]gitVar, error) {
	var out []gitVar
	section, sub := "", ""
	s := strings.TrimPrefix(data, "\ufeff") // git skips a UTF-8 byte-order mark

	line := 1
	for len(s) > 0 {
		c := s[0]
		switch {
		case c == '\n':
			line++
			s = s[1:]
		case c == ' ' || c == '\t' || c == '\r':
			s = s[1:]
		case c == '#' || c == ';':
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i:]
			} else {
				s = ""
			}
		case c == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 || strings.ContainsRune(s[:end], '\n') {
				return nil, fmt.Errorf("line %d: unterminated section header", line)
			}
			var err error
			if section, sub, err = parseGitSection(s[1:end]); err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			s = s[end+1:]
		case isGitKeyStart(c):
			if section == "" {
				return nil, fmt.Errorf("line %d: a variable outside any section", line)
			}
			i := 0
			for i < len(s) && (isGitKeyStart(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '-') {
				i++
			}
			key := strings.ToLower(s[:i])
			s = s[i:]
			for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
				s = s[1:]
			}
			if len(s) == 0 || s[0] == '\n' || s[0] == '#' || s[0] == ';' || s[0] == '\r' {
				out = append(out, gitVar{section, sub, key, "true"})
				continue
			}
			if s[0] != '=' {
				return nil, fmt.Errorf("line %d: bad variable %q", line, key)
			}
			val, rest, lines, err := parseGitValue(s[1:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			line += lines
			s = rest
			out = append(out, gitVar{section, sub, key, val})
		default:
			return nil, fmt.Errorf("line %d: unexpected %q", line, c)
		}
	}
	return out, nil
}

func isGitKeyStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func parseGitSection(h string) (section, sub string, err error) {
	name, rest, quoted := strings.Cut(h, " ")
	if !quoted {
		// [section] or the old [section.sub] (its subsection lowercased).
		name, sub, _ = strings.Cut(h, ".")
		return strings.ToLower(name), strings.ToLower(sub), checkGitSection(name)
	}
	rest = strings.TrimLeft(rest, " \t")
	if len(rest) < 2 || rest[0] != '"' || rest[len(rest)-1] != '"' {
		return "", "", fmt.Errorf("bad section header [%s]", h)
	}
	var b strings.Builder
	body := rest[1 : len(rest)-1]
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			if i+1 < len(body) {
				i++
			}
			b.WriteByte(body[i])
		case '"':
			return "", "", fmt.Errorf("bad section header [%s]", h)
		default:
			b.WriteByte(body[i])
		}
	}
	return strings.ToLower(name), b.String(), checkGitSection(name)
}

func checkGitSection(name string) error {
	if name == "" {
		return fmt.Errorf("empty section name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(isGitKeyStart(c) || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return fmt.Errorf("bad section name %q", name)
		}
	}
	return nil
}

// parseGitValue reads a value up to its end of line: quotes, the escapes
// \n \t \b \" \\, a backslash-newline continuation, and a comment outside
// quotes. Surrounding white space outside quotes is dropped. lines counts
// the newlines consumed by continuations.
func parseGitValue(s string) (val, rest string, lines int, err error) {
	var b strings.Builder
	inQuote := false
	pending := 0 // white space kept only if more value follows
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\n' {
			if inQuote {
				return "", "", 0, fmt.Errorf("unterminated quote")
			}
			break
		}
		if !inQuote && (c == ' ' || c == '\t' || c == '\r') {
			if b.Len() > 0 {
				pending++
			}
			continue
		}
		if !inQuote && (c == '#' || c == ';') {
			for i < len(s) && s[i] != '\n' {
				i++
			}
			break
		}
		for ; pending > 0; pending-- {
			b.WriteByte(' ')
		}
		switch c {
		case '"':
			inQuote = !inQuote
		case '\\':
			if i+1 >= len(s) {
				return "", "", 0, fmt.Errorf("backslash at end of file")
			}
			i++
			switch s[i] {
			case '\n':
				lines++
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				if b.Len() > 0 {
					str := b.String()
					b.Reset()
					b.WriteString(str[:len(str)-1])
				}
			case '"', '\\':
				b.WriteByte(s[i])
			default:
				return "", "", 0, fmt.Errorf("bad escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	if inQuote {
		return "", "", 0, fmt.Errorf("unterminated quote")
	}
	return b.String(), s[i:], lines, nil
}
