package wiring

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/policy"
)

// TestParsedPolicyFollowsTheBytes: a policy file read again with the same
// bytes gives the policy parsed then; changed bytes, or the same bytes
// under another name, are parsed afresh and give what Parse gives.
func TestParsedPolicyFollowsTheBytes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "airlock.yaml")
	one := []byte("fs: {read: [.]}\nshell: {allow: [git]}\n")
	two := []byte("fs: {read: [.]}\nshell: {allow: [git, ls]}\n")
	a, err := parseKept(file, one)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseKept(file, append([]byte(nil), one...))
	if err != nil || b != a {
		t.Fatalf("the same bytes again: got %p (%v), want the policy parsed before %p", b, err, a)
	}
	for _, c := range []struct {
		name string
		file string
		data []byte
	}{{"changed bytes", file, two}, {"another file", filepath.Join(dir, "other.yaml"), one}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseKept(c.file, c.data)
			if err != nil {
				t.Fatal(err)
			}
			want, err := policy.Parse(c.file, c.data)
			if err != nil {
				t.Fatal(err)
			}
			if got == a || !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want a fresh parse %+v", got, want)
			}
		})
	}
	if _, err := parseKept(file, []byte("fs: [")); err == nil {
		t.Error("an invalid policy: got no error")
	}
	if _, err := parseKept(file, []byte("fs: [")); err == nil {
		t.Error("an invalid policy read again: got no error (an error was kept as a policy)")
	}
}

// TestParsedPolicyLargeIsNotKept: a policy over the bound is parsed every
// time, never kept.
func TestParsedPolicyLargeIsNotKept(t *testing.T) {
	file := filepath.Join(t.TempDir(), "airlock.yaml")
	data := []byte("fs: {read: [.]}\n# " + strings.Repeat("x", maxParsedBytes) + "\n")
	a, err := parseKept(file, data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseKept(file, data)
	if err != nil || a == b {
		t.Errorf("a policy of %d bytes read twice: got the same policy (%v), want a fresh parse", len(data), err)
	}
}
