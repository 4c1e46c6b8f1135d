package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzArguments feeds arbitrary bytes to every tool's argument reader and
// to the directory-listing formatter: an error is fine, a panic is not, and
// whatever is accepted is a JSON object without duplicate keys.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{
		`{"argv":["echo","hi"]}`, `{"command":"ls | wc -l","timeout":2.5}`, `{"path":"a","view":"stub","budget":100}`,
		`{"path":"a","path":"b"}`, `{"budget":1e400}`, `{"budget":-1}`, `{"view":"everything"}`, `null`, ``, `[]`,
		`{"argv":"echo"}`, `{"pattern":"-e","path":"-r"}`, "0\x00d\x004096\x00\x00w\x001\x00d\x00123\x00\x00sub\x001\x00l\x002\x00/etc\x00x\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, dst := range []any{&execArgs{}, &pathArgs{}, &searchArgs{}, &struct {
			writeArgs
			fitArgs
		}{}} {
			if decode("fuzz", data, dst) == nil {
				var m map[string]any
				if s := strings.TrimSpace(string(data)); s != "" && s != "null" && json.Unmarshal(data, &m) != nil {
					t.Errorf("accepted %q, which is not a JSON object", data)
				}
			}
		}
		out, _ := formatEntries(string(data))
		if out == "" || !strings.HasSuffix(out, "\n") {
			t.Errorf("formatEntries(%q) = %q, want lines", data, out)
		}
	})
}
