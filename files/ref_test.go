package files

import (
	"os"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/google/go-cmp/cmp"
)

const goodHex = "9f2c1a0b9f2c1a0b9f2c1a0b9f2c1a0b9f2c1a0b9f2c1a0b9f2c1a0b9f2c1a0b"

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"good", RefPrefix + goodHex, true},
		{"upper-case digits", RefPrefix + strings.ToUpper(goodHex), false},
		{"short", RefPrefix + goodHex[:63], false},
		{"long", RefPrefix + goodHex + "0", false},
		{"trailing newline", RefPrefix + goodHex + "\n", false},
		{"leading space", " " + RefPrefix + goodHex, false},
		{"other algorithm", "airlock-file:sha512:" + goodHex, false},
		{"other scheme", "oz0-file:sha256:" + goodHex, false},
		{"not hex", RefPrefix + strings.Repeat("g", 64), false},
		{"empty", "", false},
		{"prefix only", RefPrefix, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRef(tc.in)
			if tc.ok {
				if err != nil || r.String() != tc.in {
					t.Fatalf("got %v, %v; want %s", r, err, tc.in)
				}
				return
			}
			if errs.ClassOf(err) != errs.Invalid {
				t.Fatalf("got %v (%v), want invalid", r, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("got a multi-line error %q", err)
			}
		})
	}
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{RefPrefix + goodHex, RefPrefix, "", "airlock-file:", RefPrefix + goodHex + "\x00", RefPrefix + strings.Repeat("é", 32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			if errs.ClassOf(err) != errs.Invalid || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want a one-line invalid error", err)
			}
			return
		}
		if r.String() != s {
			t.Fatalf("parsed %q, printed %q: two spellings of one ref", s, r)
		}
	})
}

func TestRefsIn(t *testing.T) {
	a, b := RefOf([]byte("a")), RefOf([]byte("b"))
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
		bad  bool
	}{
		{"none", map[string]any{"path": "x", "n": 3}, nil, false},
		{"top-level refs, sorted, once", map[string]any{"x": b.String(), "y": a.String(), "z": a.String()}, sortedRefs(a, b), false},
		{"nested refs are data, not files", map[string]any{"opts": map[string]any{"f": a.String()}, "list": []any{b.String()}}, nil, false},
		{"a malformed ref is refused", map[string]any{"archive": RefPrefix + "abc"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RefsIn(tc.args)
			if tc.bad {
				if errs.ClassOf(err) != errs.Invalid || !strings.Contains(err.Error(), `"archive"`) {
					t.Fatalf("got %v, want invalid naming the argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, refStrings(got), cmp.Comparer(func(x, y []string) bool { return strings.Join(x, ",") == strings.Join(y, ",") })); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func sortedRefs(rs ...Ref) []string {
	out := refStrings(rs)
	if len(out) == 2 && out[0] > out[1] {
		out[0], out[1] = out[1], out[0]
	}
	return out
}

func TestMaterialize(t *testing.T) {
	f := newFixture(t, Options{})
	sc := Scope{Tenant: "acme", Tree: "a"}
	data := []byte("an archive for the test runner")
	r := mustPut(t, f.s, sc, data)
	dir := t.TempDir()
	p, err := f.s.Materialize(ctx, sc, r, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != string(data) {
		t.Fatalf("got %q, %v", got, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o444 {
		t.Errorf("got mode %v, want read-only 0444", fi.Mode().Perm())
	}
	other := t.TempDir()
	if _, err := f.s.Materialize(ctx, Scope{Tenant: "acme", Tree: "b"}, r, other); errs.ClassOf(err) != errs.NotFound {
		t.Errorf("another tree: got %v, want not found", err)
	}
	if n := countFiles(t, other); n != 0 {
		t.Errorf("a refused materialisation wrote %d files", n)
	}
}
