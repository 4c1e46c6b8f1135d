package wire

import "testing"

func TestCheckJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"one object", `{"a":1,"b":[{"c":2},{"c":3}]}`, true},
		{"a key twice", `{"a":1,"a":2}`, false},
		{"a key twice under case", `{"tier":1,"Tier":2}`, false},
		{"a key twice under Unicode folding", "{\"kind\":1,\"\u212aind\":2}", false},
		{"a key twice, once escaped", `{"a0":1,"a\u0030":2}`, false},
		{"a key twice in a nested object", `{"x":[{"a":1,"A":2}]}`, false},
		{"two values", `{} {}`, false},
		{"not JSON", `{"a":`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckJSON([]byte(tc.in)); (err == nil) != tc.ok {
				t.Fatalf("CheckJSON(%s) = %v, want ok=%v", tc.in, err, tc.ok)
			}
		})
	}
}
