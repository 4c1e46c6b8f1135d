package offload

import (
	"encoding/json"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/google/go-cmp/cmp"
)

func TestToolSchemaIsJSON(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal([]byte(ToolSchema), &m); err != nil {
		t.Fatalf("ToolSchema: %v", err)
	}
	props, _ := m["properties"].(map[string]any)
	for _, k := range []string{"ref", "view", "section", "range", "query", "budget"} {
		if _, ok := props[k]; !ok {
			t.Errorf("the schema lacks %q", k)
		}
	}
}

func TestArgsFrom(t *testing.T) {
	ref := "airlock-file:sha256:" + "ab"
	for _, tc := range []struct {
		name string
		in   string
		want Args
		bad  bool
	}{
		{"all", `{"ref":"` + ref + `","view":"section","section":"Install","budget":2000}`, Args{Ref: ref, View: "section", Section: "Install", Budget: 2000}, false},
		{"range", `{"ref":"` + ref + `","range":"120-180"}`, Args{Ref: ref, Range: "120-180"}, false},
		{"null budget", `{"ref":"` + ref + `","budget":null}`, Args{Ref: ref}, false},
		{"no ref", `{"section":"x"}`, Args{}, true},
		{"unknown argument", `{"ref":"` + ref + `","lines":"1-2"}`, Args{}, true},
		{"fractional budget", `{"ref":"` + ref + `","budget":1.5}`, Args{}, true},
		{"string budget", `{"ref":"` + ref + `","budget":"100"}`, Args{}, true},
		{"number section", `{"ref":"` + ref + `","section":3}`, Args{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal([]byte(tc.in), &m); err != nil {
				t.Fatal(err)
			}
			got, err := ArgsFrom(m)
			if tc.bad {
				if errs.ClassOf(err) != errs.Invalid {
					t.Fatalf("got %+v, %v; want invalid", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
