package mediator

import (
	"strings"
	"testing"
)

// FuzzFormatEntries: whatever find printed, the listing is lines.
func FuzzFormatEntries(f *testing.F) {
	for _, s := range []string{"", "\x00", "0\x00d\x004096\x00\x00w\x001\x00d\x00123\x00\x00sub\x001\x00l\x002\x00/etc\x00x\x00",
		"1\x00f\x003\x00\x00a\nb\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, _ := formatEntries(raw)
		if out == "" || !strings.HasSuffix(out, "\n") {
			t.Errorf("formatEntries(%q) = %q, want lines", raw, out)
		}
	})
}

func TestFormatEntries(t *testing.T) {
	for _, c := range []struct {
		name, raw, want string
		isDir           bool
	}{
		{"empty dir", "0\x00d\x004096\x00\x00w\x00", "(empty directory)\n", true},
		{"kinds", "0\x00d\x004096\x00\x00w\x001\x00d\x00123\x00\x00sub\x001\x00l\x002\x00/etc\x00x\x001\x00f\x005\x00\x00a.txt\x001\x00p\x000\x00\x00q\x00",
			"a.txt\t5 bytes\nq\t(fifo)\nsub/\nx -> /etc\n", true},
		{"a file", "0\x00f\x005\x00\x00a.txt\x00", "(empty directory)\n", false},
		{"control bytes quoted", "0\x00d\x001\x00\x00w\x001\x00f\x001\x00\x00a\nb\x00", "\"a\\nb\"\t1 bytes\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, isDir := formatEntries(c.raw)
			if got != c.want || isDir != c.isDir {
				t.Errorf("got %q, %v; want %q, %v", got, isDir, c.want, c.isDir)
			}
		})
	}
}
