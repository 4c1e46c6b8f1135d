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
		`{"argv":"echo"}`, `{"pattern":"-e","path":"-r"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, dst := range []any{&execArgs{}, &pathArgs{}, &searchArgs{}, &writeArgs{}} {
			if _, err := decode("fuzz", data, dst); err == nil {
				var m map[string]any
				if s := strings.TrimSpace(string(data)); s != "" && s != "null" && json.Unmarshal(data, &m) != nil {
					t.Errorf("accepted %q, which is not a JSON object", data)
				}
			}
		}
	})
}
