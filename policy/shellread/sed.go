package shellread

import "strings"

// sed is a "read-only" tool that can run commands: GNU sed's `e` command
// runs its argument (or the pattern space) through sh, the `e` flag of `s`
// runs the replaced pattern space, and `w`, `W` and the `w` flag of `s`
// write files. sedScripts reads the scripts given on the command line.

// sedText is one script given on the command line and the argv index it
// came from.
type sedText struct {
	at   int
	text string
}

// sedScripts reads the sed scripts of the command at idx.
func (r *reader) sedScripts(idx int, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	var scripts []sedText
	sandbox, explicit := false, false
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue // an operand: the script (when no -e) or a file
		}
		if strings.HasPrefix(a, "--") {
			name, val, has := strings.Cut(a[2:], "=")
			switch {
			case name == "sandbox":
				sandbox = true
			case len(name) >= 2 && strings.HasPrefix("expression", name):
				explicit = true
				if has {
					scripts = append(scripts, sedText{i, val})
				} else if i+1 < len(argv) {
					i++
					scripts = append(scripts, sedText{i, argv[i]})
				}
			case len(name) >= 2 && strings.HasPrefix("file", name):
				explicit = true
				r.undecidable(idx, "sed -f reads a script from a file, which may run commands")
				if !has {
					i++
				}
			case len(name) >= 2 && strings.HasPrefix("line-length", name) && !has:
				i++
			}
			continue
		}
	cluster:
		for k := 1; k < len(a); k++ {
			switch a[k] {
			case 'e':
				explicit = true
				if k+1 < len(a) {
					scripts = append(scripts, sedText{i, a[k+1:]})
				} else if i+1 < len(argv) {
					i++
					scripts = append(scripts, sedText{i, argv[i]})
				}
				break cluster
			case 'f':
				explicit = true
				r.undecidable(idx, "sed -f reads a script from a file, which may run commands")
				if k+1 == len(a) {
					i++
				}
				break cluster
			case 'l':
				if k+1 == len(a) {
					i++
				}
				break cluster
			case 'i':
				break cluster // an optional suffix follows
			}
		}
	}
	if !explicit {
		// Without -e the first operand is the script.
		for k := 1; k < len(argv); k++ {
			a := argv[k]
			if a == "--" {
				if k+1 < len(argv) {
					scripts = append(scripts, sedText{k + 1, argv[k+1]})
				}
				break
			}
			if len(a) < 2 || a[0] != '-' || isDynamic(c, k) {
				scripts = append(scripts, sedText{k, a})
				break
			}
			if (a == "-l" || a == "--line-length") && k+1 < len(argv) {
				k++
			}
		}
	}
	if sandbox {
		return
	}
	for _, st := range scripts {
		if isDynamic(c, st.at) {
			r.undecidable(idx, "a sed script only known at run time may run commands")
			return
		}
		r.sedScript(idx, st.text, s)
	}
}

// sedScript scans one script for commands that run or write.
func (r *reader) sedScript(idx int, text string, s scope) {
	p := sedParser{src: text}
	for !p.done() {
		p.skipSpaceAndSeparators()
		if p.done() {
			return
		}
		if !p.address() {
			r.undecidable(idx, "a sed script the reader cannot follow")
			return
		}
		p.skipSpace()
		for !p.done() && (p.peek() == '!' || p.peek() == ' ') {
			p.pos++
		}
		if p.done() {
			return
		}
		cmd := p.next()
		switch cmd {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'l', 'n', 'N', 'p', 'P', 'x', 'z', 'F', 'q', 'Q':
			p.skipToSeparator()
		case ':', 'b', 't', 'T', 'v':
			p.skipToSeparator()
		case 'a', 'i', 'c':
			p.skipLine()
		case 'r', 'R':
			p.skipLine()
		case 'w', 'W':
			file := strings.TrimSpace(p.restOfLine())
			r.sedWrite(idx, file)
		case 'e':
			command := strings.TrimSpace(p.restOfLine())
			if command == "" {
				r.undecidable(idx, "sed's e command runs the text it reads as a command")
				continue
			}
			r.script(idx, command, s)
		case 'y':
			if !p.delimited(2) {
				r.undecidable(idx, "a sed script the reader cannot follow")
				return
			}
			p.skipToSeparator()
		case 's':
			if !p.delimited(2) {
				r.undecidable(idx, "a sed script the reader cannot follow")
				return
			}
			// Flags: g p i I m M e NUMBER w FILE.
			for !p.done() {
				f := p.peek()
				if f == 'w' {
					p.pos++
					r.sedWrite(idx, strings.TrimSpace(p.restOfLine()))
					break
				}
				if f == 'e' {
					r.undecidable(idx, "sed's s///e runs the replaced text as a command")
				}
				if f == ';' || f == '\n' || f == '}' || f == ' ' || f == '\t' {
					break
				}
				p.pos++
			}
			p.skipToSeparator()
		default:
			r.undecidable(idx, "a sed script the reader cannot follow")
			return
		}
	}
}

func (r *reader) sedWrite(idx int, file string) {
	if file == "" {
		return
	}
	c := &r.out[idx]
	switch file {
	case "/dev/stdout", "/dev/stderr":
		return
	}
	c.Redirects = append(append([]Redirect(nil), c.Redirects...), Redirect{Op: "w", Path: file, Write: true})
}

// sedParser walks a sed script.
type sedParser struct {
	src string
	pos int
}

func (p *sedParser) done() bool { return p.pos >= len(p.src) }
func (p *sedParser) peek() byte { return p.src[p.pos] }
func (p *sedParser) next() byte { b := p.src[p.pos]; p.pos++; return b }

func (p *sedParser) skipSpace() {
	for !p.done() && (p.peek() == ' ' || p.peek() == '\t') {
		p.pos++
	}
}

func (p *sedParser) skipSpaceAndSeparators() {
	for !p.done() && strings.IndexByte(" \t\n;", p.peek()) >= 0 {
		p.pos++
	}
	if !p.done() && p.peek() == '#' {
		p.skipLine()
		p.skipSpaceAndSeparators()
	}
}

func (p *sedParser) skipToSeparator() {
	for !p.done() && p.peek() != ';' && p.peek() != '\n' && p.peek() != '}' {
		p.pos++
	}
}

func (p *sedParser) skipLine() {
	p.restOfLine()
}

func (p *sedParser) restOfLine() string {
	start := p.pos
	for !p.done() && p.peek() != '\n' {
		p.pos++
	}
	return p.src[start:p.pos]
}

// address skips an optional address or address range.
func (p *sedParser) address() bool {
	for part := 0; part < 2; part++ {
		if p.done() {
			return true
		}
		switch b := p.peek(); {
		case b >= '0' && b <= '9':
			for !p.done() && (p.peek() >= '0' && p.peek() <= '9' || p.peek() == '~') {
				p.pos++
			}
		case b == '$':
			p.pos++
		case b == '/':
			p.pos++
			if !p.until('/') {
				return false
			}
			for !p.done() && (p.peek() == 'I' || p.peek() == 'M') {
				p.pos++
			}
		case b == '\\':
			p.pos++
			if p.done() {
				return false
			}
			d := p.next()
			if !p.until(d) {
				return false
			}
		case part == 1 && (b == '+' || b == '~'):
			p.pos++
			for !p.done() && p.peek() >= '0' && p.peek() <= '9' {
				p.pos++
			}
		default:
			return true
		}
		p.skipSpace()
		if p.done() || p.peek() != ',' {
			return true
		}
		p.pos++
		p.skipSpace()
	}
	return true
}

// until skips to just after the next unescaped d.
func (p *sedParser) until(d byte) bool {
	for !p.done() {
		b := p.next()
		if b == '\\' && !p.done() {
			p.pos++
			continue
		}
		if b == d {
			return true
		}
	}
	return false
}

// delimited skips n parts delimited by the character at the cursor
// (s/a/b/, y/a/b/).
func (p *sedParser) delimited(n int) bool {
	if p.done() {
		return false
	}
	d := p.next()
	if d == '\n' || d == '\\' {
		return false
	}
	for i := 0; i < n; i++ {
		if !p.until(d) {
			return false
		}
	}
	return true
}
