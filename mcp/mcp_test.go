package mcp

import (
	"encoding/json"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/google/go-cmp/cmp"
)

func TestName(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"plain", "read_file", "read_file", false},
		{"dotted", "fs.write", "fs.write", false},
		{"NFD becomes NFC", "cafe\u0301", "caf\u00e9", false},
		{"NFC stays", "caf\u00e9", "caf\u00e9", false},
		{"empty", "", "", true},
		{"NUL", "read\x00file", "", true},
		{"newline", "read\nfile", "", true},
		{"escape", "read\x1b[31mfile", "", true},
		{"DEL", "read\x7f", "", true},
		{"zero-width space", "read\u200bfile", "", true},
		{"zero-width joiner", "read\u200dfile", "", true},
		{"word joiner", "read\u2060file", "", true},
		{"byte-order mark", "\ufeffread_file", "", true},
		{"right-to-left override", "read\u202efile", "", true},
		{"soft hyphen", "read\u00adfile", "", true},
		{"Hangul filler", "read\u3164file", "", true},
		{"variation selector", "read\ufe0ffile", "", true},
		{"line separator", "read\u2028file", "", true},
		{"private use", "read\ue000file", "", true},
		{"invalid UTF-8", "read\xfffile", "", true},
		{"too long", string(make([]byte, MaxNameLen+1)), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Name(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Name(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil && !errs.Is(err, errs.Invalid) {
				t.Errorf("error class %v, want invalid", errs.ClassOf(err))
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"object", `{"a":1,"b":{"c":[1,{"d":2}]}}`, false},
		{"same key in sibling objects", `[{"a":1},{"a":2}]`, false},
		{"same key at two depths", `{"a":{"a":1}}`, false},
		{"empty object and array", `{"a":{},"b":[]}`, false},
		{"scalar", `3`, false},
		{"trailing newline", "{\"a\":1}\n", false},
		{"duplicate top-level key", `{"method":"tools/list","method":"tools/call"}`, true},
		{"duplicate nested key", `{"params":{"name":"a","name":"b"}}`, true},
		{"duplicate after an object value", `{"a":{"x":1},"a":2}`, true},
		{"duplicate in array element", `[{"k":1,"k":1}]`, true},
		{"escaped duplicate", `{"name":"a","\u006eame":"b"}`, true},
		{"case-folded duplicate", `{"name":"get-sum","Name":"echo"}`, true},
		{"upper-case duplicate", `{"name":"get-sum","NAME":"echo"}`, true},
		{"case-folded duplicate in arguments", `{"params":{"arguments":{"path":"docs/a.md","Path":"secret.txt"}}}`, true},
		{"case-folded duplicate in envelope", `{"method":"tools/list","Method":"tools/call"}`, true},
		{"Kelvin sign folds to k", `{"kind":1,"\u212aind":2}`, true},
		{"long s folds to s", `{"size":1,"\u017fize":2}`, true},
		{"full-width duplicate (NFKC)", `{"name":1,"ｎａｍｅ":2}`, true},
		{"ligature duplicate (NFKC)", `{"file":1,"\ufb01le":2}`, true},
		{"NFD duplicate", `{"café":1,"cafe\u0301":2}`, true},
		{"sharp s folds to ss", `{"strasse":1,"straße":2}`, true},
		{"case differs only in a sibling object", `[{"name":1},{"Name":2}]`, false},
		{"distinct keys that share a prefix", `{"name":1,"names":2}`, false},
		{"empty", ``, true},
		{"truncated", `{"a":`, true},
		{"unclosed", `{"a":1`, true},
		{"two values", `{} {}`, true},
		{"garbage", `{"a" 1}`, true},
		{"too deep", deep(MaxDepth + 1), true},
		{"deep but allowed", deep(MaxDepth), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckJSON([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("CheckJSON(%.60q) = %v, want error %v", tt.in, err, tt.wantErr)
			}
		})
	}
}

// TestFoldKey: the fold CheckJSON compares keys in is the one Go's
// encoding/json matches struct fields in, and more (NFKC): every key that
// encoding/json would decode into a field named "name" folds to "name".
func TestFoldKey(t *testing.T) {
	for _, k := range []string{"name", "Name", "NAME", "nAmE", "ｎａｍｅ", "Ｎame"} {
		if got := FoldKey(k); got != "name" {
			t.Errorf("FoldKey(%q) = %q, want %q", k, got, "name")
		}
	}
	for _, k := range []string{"kind", "\u212aind"} {
		var v struct{ Kind int }
		if err := json.Unmarshal([]byte(`{"`+k+`":1}`), &v); err != nil {
			t.Fatal(err)
		}
		if v.Kind != 1 {
			continue // encoding/json did not match it; nothing to show
		}
		if FoldKey(k) != FoldKey("Kind") {
			t.Errorf("encoding/json matches %q to Kind, but FoldKey(%q) = %q differs from %q", k, k, FoldKey(k), FoldKey("Kind"))
		}
	}
}

func TestSkeleton(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"get-sum", "GET-SUM", true},
		{"secret", "ｓｅｃｒｅｔ", true},
		{"café", "cafe\u0301", true},
		{"Delete_File", "delete_file", true},
		{"file", "\ufb01le", true},
		{"echo", "echo2", false},
		{"get-sum", "get_sum", false},
	}
	for _, tt := range tests {
		if got := Skeleton(tt.a) == Skeleton(tt.b); got != tt.same {
			t.Errorf("Skeleton(%q) == Skeleton(%q) is %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

func deep(n int) string {
	b := make([]byte, 0, 2*n)
	for i := 0; i < n; i++ {
		b = append(b, '[')
	}
	for i := 0; i < n; i++ {
		b = append(b, ']')
	}
	return string(b)
}

func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[{"x":[{}]}]`, `{"a":`, `"\u0061"`, `{"a":{"b":{"a":1,"b":2}}}`, `{"name":1,"Name":2}`, `{"ｎａｍｅ":1,"name":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckJSON(data)
		if err == nil && !json.Valid(data) {
			t.Fatalf("CheckJSON accepted invalid JSON %q", data)
		}
		if err == nil {
			// Accepted JSON round-trips through a map without losing keys.
			var v any
			if json.Unmarshal(data, &v) != nil {
				t.Fatalf("accepted %q but it does not unmarshal", data)
			}
		}
	})
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"a", "cafe\u0301", "x\u200by", "\x00", "fs.write"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Name(s)
		if err != nil {
			return
		}
		again, err := Name(n)
		if err != nil || again != n {
			t.Fatalf("Name is not idempotent on %q: %q, %v", n, again, err)
		}
		for _, r := range n {
			if badNameRune(r) {
				t.Fatalf("Name(%q) kept %U", s, r)
			}
		}
	})
}

func TestFitConvention(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   bool
	}{
		{"convention", `{"type":"object","properties":{"view":{"type":"string","enum":["stub","summary","section","full"]},"budget":{"type":"integer"}}}`, true},
		{"subset of views", `{"properties":{"view":{"enum":["stub","full"]},"budget":{"type":"integer"}}}`, true},
		{"nullable budget", `{"properties":{"view":{"enum":["stub","full",null]},"budget":{"type":["integer","null"]}}}`, true},
		{"Optional via anyOf", `{"properties":{"view":{"anyOf":[{"enum":["stub","summary","section","full"],"type":"string"},{"type":"null"}]},"budget":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}`, true},
		{"budget without view", `{"properties":{"budget":{"type":"integer"}}}`, false},
		{"money budget beside a free view", `{"properties":{"view":{"type":"string"},"budget":{"type":"integer"}}}`, false},
		{"view enum of other things", `{"properties":{"view":{"enum":["grid","list"]},"budget":{"type":"integer"}}}`, false},
		{"view enum mixing other things", `{"properties":{"view":{"enum":["stub","grid"]},"budget":{"type":"integer"}}}`, false},
		{"number budget", `{"properties":{"view":{"enum":["stub","full"]},"budget":{"type":"number"}}}`, false},
		{"string budget", `{"properties":{"view":{"enum":["stub","full"]},"budget":{"type":"string"}}}`, false},
		{"empty enum", `{"properties":{"view":{"enum":[]},"budget":{"type":"integer"}}}`, false},
		{"no schema", ``, false},
		{"not an object", `[1]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FitConvention(json.RawMessage(tt.schema)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFillBudget(t *testing.T) {
	tests := []struct {
		name       string
		args       map[string]any
		want       map[string]any
		wantFilled bool
	}{
		{"absent", map[string]any{"path": "a"}, map[string]any{"path": "a", "budget": 2000}, true},
		{"null", map[string]any{"budget": nil}, map[string]any{"budget": 2000}, true},
		{"nil args", nil, map[string]any{"budget": 2000}, true},
		{"given", map[string]any{"budget": 50.0}, map[string]any{"budget": 50.0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, filled := FillBudget(tt.args, 2000)
			if filled != tt.wantFilled {
				t.Errorf("filled = %v, want %v", filled, tt.wantFilled)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.args != nil && filled {
				if _, ok := tt.args["budget"]; ok && tt.args["budget"] != nil {
					t.Errorf("the caller's map was changed")
				}
			}
		})
	}
}

func TestErrorAndDenial(t *testing.T) {
	d := &errs.Denial{Code: errs.CodePolicyDenied, Category: "tools", Reason: "the tool rm is not allowed here"}
	je := Error(d)
	if je.Code != CodeDenied || je.Code == -32601 {
		t.Fatalf("code %d, want %d", je.Code, CodeDenied)
	}
	var data map[string]string
	if err := json.Unmarshal(je.Data, &data); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"code": "POLICY_DENIED", "category": "tools", "reason": "the tool rm is not allowed here"}
	if diff := cmp.Diff(want, data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	back, ok := Denial(je)
	if !ok || back != *d {
		t.Errorf("Denial(Error(d)) = %+v, %v; want %+v", back, ok, *d)
	}
	if _, ok := Denial(Error(errs.NotFoundf("nope"))); ok {
		t.Errorf("a not-found error read back as a denial")
	}
}
