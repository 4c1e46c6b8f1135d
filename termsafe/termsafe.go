// Package termsafe passes a boxed command's output to a person's terminal
// with every sequence that programs the terminal made visible instead of
// obeyed. A box that may print to the terminal must not set the clipboard
// (OSC 52), plant a hyperlink to a file (OSC 8), retitle the window, send
// device control strings, or ask the terminal a question whose answer the
// terminal types into the person's input (device status and attribute
// queries): none of that needs TIOCSTI. Text, tabs, newlines, carriage
// returns, backspaces, colours (SGR) and cursor movement pass unchanged, so
// progress bars and coloured logs still read as they should.
//
// It is a leaf: internal/cli imports it.
package termsafe

import (
	"bytes"
	"io"
)

// maxCSI bounds a control sequence held while its final byte is awaited;
// a longer one is shown, not obeyed.
const maxCSI = 64

// csiFinals are the CSI sequences passed as they are: colours, cursor
// movement and erasing. Everything else a CSI can do (modes, reports,
// queries, window operations, scroll regions) is shown.
var csiFinals = [256]bool{'m': true, 'A': true, 'B': true, 'C': true, 'D': true, 'E': true, 'F': true,
	'G': true, 'H': true, 'f': true, 'J': true, 'K': true, 's': true, 'u': true}

type state uint8

const (
	ground state = iota
	escape       // after ESC
	csi          // after ESC [
)

// Writer is an io.Writer that makes terminal-programming sequences
// visible. Call Flush at the end of the output: a sequence cut off by the
// end is then shown.
type Writer struct {
	w    io.Writer
	st   state
	held []byte // the ESC [ … of a CSI whose final byte has not come
	cont int    // UTF-8 continuation bytes still expected
	// c2 holds a 0xC2 not yet written: with 0x80–0x9F after it, it spells
	// a C1 control in UTF-8.
	c2  bool
	out bytes.Buffer
}

// NewWriter returns a Writer that writes the safe form of its input to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write filters p and writes the result; it reports len(p) on success.
func (t *Writer) Write(p []byte) (int, error) {
	t.out.Reset()
	for _, b := range p {
		t.byte(b)
	}
	if _, err := t.w.Write(t.out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush shows a sequence the output ended in the middle of.
func (t *Writer) Flush() error {
	t.out.Reset()
	if t.st == escape {
		t.out.WriteString("^[")
	}
	t.showHeld()
	if t.c2 {
		t.out.WriteByte(0xc2)
		t.c2 = false
	}
	t.st = ground
	if t.out.Len() == 0 {
		return nil
	}
	_, err := t.w.Write(t.out.Bytes())
	return err
}

func (t *Writer) byte(b byte) {
	switch t.st {
	case escape:
		if b == '[' {
			t.st, t.held = csi, append(t.held[:0], 0x1b, '[')
			return
		}
		// OSC, DCS, APC, PM, SOS, a reset, a charset switch: shown. What
		// follows the ESC is printable, so it reads as text.
		t.st = ground
		t.out.WriteString("^[")
		t.ground(b)
	case csi:
		t.held = append(t.held, b)
		switch {
		case b >= 0x40 && b <= 0x7e: // the final byte
			t.st = ground
			if csiFinals[b] && plainParams(t.held[2:len(t.held)-1]) {
				t.out.Write(t.held)
				t.held = t.held[:0]
				return
			}
			t.showHeld()
		case b < 0x20 || b > 0x7e || len(t.held) > maxCSI:
			t.st = ground
			last := t.held[len(t.held)-1]
			t.held = t.held[:len(t.held)-1]
			t.showHeld()
			t.ground(last)
		}
	default:
		t.ground(b)
	}
}

// ground handles a byte outside any sequence.
func (t *Writer) ground(b byte) {
	if t.c2 {
		t.c2 = false
		if b >= 0x80 && b < 0xa0 {
			t.hex(b) // U+0080–U+009F: a C1 control spelled in UTF-8
			t.cont = 0
			return
		}
		t.out.WriteByte(0xc2)
	}
	switch {
	case b == 0x1b:
		t.st, t.cont = escape, 0
	case b < 0x20 || b == 0x7f:
		t.cont = 0
		if b == '\t' || b == '\n' || b == '\r' || b == '\b' {
			t.out.WriteByte(b)
			return
		}
		t.out.WriteByte('^')
		t.out.WriteByte(b ^ 0x40) // ^G for BEL, ^? for DEL
	case b < 0x80:
		t.cont = 0
		t.out.WriteByte(b)
	case b < 0xc0: // a continuation byte
		if t.cont == 0 {
			// Not inside a character: a raw C1 control, which a terminal
			// in an 8-bit mode obeys, or a stray byte.
			t.hex(b)
			return
		}
		t.cont--
		t.out.WriteByte(b)
	case b == 0xc2:
		t.cont = 1
		t.c2 = true
	default: // another lead byte
		t.out.WriteByte(b)
		switch {
		case b >= 0xf0:
			t.cont = 3
		case b >= 0xe0:
			t.cont = 2
		default:
			t.cont = 1
		}
	}
}

// hex shows a byte as \xNN.
func (t *Writer) hex(b byte) {
	const digits = "0123456789abcdef"
	t.out.WriteString(`\x`)
	t.out.WriteByte(digits[b>>4])
	t.out.WriteByte(digits[b&0xf])
}

// showHeld writes a held CSI as text: its ESC made visible.
func (t *Writer) showHeld() {
	if len(t.held) == 0 {
		return
	}
	t.out.WriteString("^[")
	t.out.Write(t.held[1:])
	t.held = t.held[:0]
}

// plainParams reports whether a CSI's parameters are digits and
// separators only: a private marker (?, >, =, <) or an intermediate byte
// turns a colour or a movement into a mode or a query.
func plainParams(p []byte) bool {
	for _, b := range p {
		if (b < '0' || b > '9') && b != ';' && b != ':' {
			return false
		}
	}
	return true
}
