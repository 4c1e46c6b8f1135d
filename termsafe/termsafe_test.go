package termsafe

import (
	"bytes"
	"strings"
	"testing"
)

func filter(chunks ...string) string {
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, c := range chunks {
		w.Write([]byte(c))
	}
	w.Flush()
	return out.String()
}

func TestWriter(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"text", "hello, wörld ✓ 🙂\n", "hello, wörld ✓ 🙂\n"},
		{"tabs and returns", "a\tb\r\nc\bd", "a\tb\r\nc\bd"},
		{"colours", "\x1b[1;31merror\x1b[0m", "\x1b[1;31merror\x1b[0m"},
		{"cursor and erase", "50%\x1b[2K\x1b[1G100%\x1b[3A", "50%\x1b[2K\x1b[1G100%\x1b[3A"},
		{"OSC 52 clipboard", "\x1b]52;c;cm0gLXJmIH4K\x07", "^[]52;c;cm0gLXJmIH4K^G"},
		{"OSC 8 file link", "\x1b]8;;file:///etc/passwd\x1b\\click\x1b]8;;\x1b\\", "^[]8;;file:///etc/passwd^[\\click^[]8;;^[\\"},
		{"title", "\x1b]0;sudo rm\x07", "^[]0;sudo rm^G"},
		{"DCS", "\x1bP+q544e\x1b\\", "^[P+q544e^[\\"},
		{"device status query", "\x1b[6n", "^[[6n"},
		{"device attributes", "\x1b[c\x1b[>c", "^[[c^[[>c"},
		{"private mode", "\x1b[?2004l\x1b[?1049h", "^[[?2004l^[[?1049h"},
		{"window op", "\x1b[21t", "^[[21t"},
		{"private colour", "\x1b[>4;2m", "^[[>4;2m"},
		{"reset", "\x1bc", "^[c"},
		{"C1 CSI in UTF-8", "\u009b6n", `\x9b6n`},
		{"C1 OSC raw byte", "\x9d0;x\x07", `\x9d0;x^G`},
		{"NUL and BEL", "a\x00b\x07", "a^@b^G"},
		{"cut off sequence", "\x1b[1;3", "^[[1;3"},
		{"long CSI", "\x1b[" + strings.Repeat("1", 100) + "m", "^[[" + strings.Repeat("1", 100) + "m"},
		{"control byte inside CSI", "\x1b[1\nx", "^[[1\nx"},
		{"esc at the end", "x\x1b", "x^["},
		{"c2 at the end", "x\xc2", "x\xc2"},
		{"latin", "\u00e9\u00a0", "\u00e9\u00a0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := filter(c.in); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			// Byte by byte, as a pipe may deliver it.
			var chunks []string
			for i := range len(c.in) {
				chunks = append(chunks, c.in[i:i+1])
			}
			if got := filter(chunks...); got != c.want {
				t.Errorf("byte by byte: got %q, want %q", got, c.want)
			}
		})
	}
}

// FuzzWriter: whatever the box prints, what reaches the terminal holds no
// ESC but the start of an allowed CSI, no C1 control, and no C0 control
// but tab, newline, return and backspace; and chunking does not change it.
func FuzzWriter(f *testing.F) {
	for _, s := range []string{"\x1b]52;c;x\x07", "\x1b[6n", "\u009b", "\x1b[1;31m", "ok\n", "\xc2\x9b"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, in string, cut int) {
		got := filter(in)
		if cut > 0 && cut < len(in) {
			if two := filter(in[:cut], in[cut:]); two != got {
				t.Fatalf("chunked at %d: %q, whole: %q", cut, two, got)
			}
		}
		for i := 0; i < len(got); i++ {
			b := got[i]
			switch {
			case b == 0x1b:
				j := i + 2
				for j < len(got) && (got[j] >= '0' && got[j] <= '9' || got[j] == ';' || got[j] == ':') {
					j++
				}
				if i+1 >= len(got) || got[i+1] != '[' || j >= len(got) || !csiFinals[got[j]] {
					t.Fatalf("an ESC that is not an allowed CSI at %d: %q", i, got)
				}
			case b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\b', b == 0x7f:
				t.Fatalf("control byte %#x at %d: %q", b, i, got)
			case b == 0xc2 && i+1 < len(got) && got[i+1] >= 0x80 && got[i+1] < 0xa0:
				t.Fatalf("a C1 control at %d: %q", i, got)
			}
		}
	})
}
