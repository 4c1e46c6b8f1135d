package shellread

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/read")

const goldenSep = "\n---- commands ----\n"

// TestGolden reads each script in testdata/read/*.txt (the text before the
// separator line) and compares the commands, as indented JSON, with the text
// after it. Run with -update to rewrite the expected part.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/read/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			src, want, ok := strings.Cut(string(data), goldenSep)
			if !ok {
				t.Fatalf("%s: no %q line", file, strings.TrimSpace(goldenSep))
			}
			cmds, err := Read(src)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			got := goldenJSON(t, cmds)
			if *update {
				if err := os.WriteFile(file, []byte(src+goldenSep+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s: commands differ from the golden file (run go test -update to accept)\ngot:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}

// goldenJSON writes one command per line, so a diff shows which changed.
func goldenJSON(t *testing.T, cmds []Command) string {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, c := range cmds {
		var one bytes.Buffer
		enc := json.NewEncoder(&one)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
		b.WriteString("  ")
		b.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
		if i < len(cmds)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return b.String()
}
