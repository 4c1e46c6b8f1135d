package gateway

import (
	"encoding/json"
	"testing"
)

func TestDefinitionHints(t *testing.T) {
	tests := []struct {
		name        string
		annotations string
		want        Hints
	}{
		{"none", ``, Hints{}},
		{"read-only and closed", `{"readOnlyHint": true, "openWorldHint": false}`, Hints{ReadOnly: true}},
		{"read-only, world unstated (open by the spec's default)", `{"readOnlyHint": true}`, Hints{}},
		{"read-only and open-world", `{"readOnlyHint": true, "openWorldHint": true}`, Hints{OpenWorld: true}},
		{"a string is no boolean", `{"readOnlyHint": "true", "openWorldHint": false}`, Hints{}},
		{"a key in another case", `{"ReadOnlyHint": true, "openWorldHint": false}`, Hints{}},
		{"not an object", `[true]`, Hints{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Definition{Name: "t", Annotations: json.RawMessage(tt.annotations)}
			if got := d.Hints(); got != tt.want {
				t.Fatalf("Hints() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
