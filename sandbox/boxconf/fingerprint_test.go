package boxconf

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// describeProtocol is what Fingerprint hashes: Revision, the flags, the
// walls' encoding and the shape of every type that crosses into the box
// or back.
func describeProtocol() string {
	var b strings.Builder
	b.WriteString("rev " + strconv.Itoa(Revision) + ";")
	for _, f := range []string{FlagConfig, FlagStatus, FlagExecWall, FlagSeal, FlagServe, FlagScratch, GVisorLaunchArg, wallsMagic} {
		b.WriteString(f + ";")
	}
	seen := map[reflect.Type]bool{}
	for _, v := range []any{Config{}, Status{}, Ready{}, Call{}, CallDone{}, BoxClear{}, GVisorSource{}} {
		describe(&b, reflect.TypeOf(v), seen)
	}
	// The walls' encoding is written by hand, beside the types: its
	// layout (the order of the fields, which bit is which flag) is part
	// of the protocol the types do not show, so the bytes of walls with
	// every field set, and of each flag alone, are hashed too.
	for _, w := range layoutWalls() {
		b.WriteString(hex.EncodeToString(EncodeWalls(w)) + ";")
	}
	return b.String()
}

// layoutWalls are walls whose encodings show the encoding's layout: one
// with every field set to a value of its own, and one for each boolean
// (each flag) alone.
func layoutWalls() []*Walls {
	all := &Walls{}
	fill(reflect.ValueOf(all).Elem(), new(int))
	out := []*Walls{all, {Write: []string{}}, {Exec: &Exec{}}, {Listen: &Listen{}}}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(Walls{})) {
		if f.Type.Kind() == reflect.Bool {
			w := &Walls{}
			reflect.ValueOf(w).Elem().FieldByIndex(f.Index).SetBool(true)
			out = append(out, w)
		}
	}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(Listen{})) {
		if f.Type.Kind() == reflect.Bool {
			l := &Listen{}
			reflect.ValueOf(l).Elem().FieldByIndex(f.Index).SetBool(true)
			out = append(out, &Walls{Listen: l})
		}
	}
	return out
}

// fill sets every field v holds to a value of its own (n counts them):
// strings and lists name their field's number, integers are it, booleans
// are true, pointers point at a filled value.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("f" + strconv.Itoa(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(int64(*n))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), n)
		v.Set(s)
	case reflect.Uint8:
		v.SetUint(uint64(*n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), n)
		}
	default:
		panic("fill: a field of kind " + v.Kind().String() + " in the walls: teach fill and the encoding about it")
	}
}

// describe writes t's shape: its kind, and for a struct each field's name,
// JSON tag and type, the types it holds described once each.
func describe(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		b.WriteString(t.Kind().String() + " ")
		describe(b, t.Elem(), seen)
		return
	case reflect.Struct:
	default:
		b.WriteString(t.Kind().String() + ";")
		return
	}
	b.WriteString(t.Name())
	if seen[t] {
		b.WriteString(";")
		return
	}
	seen[t] = true
	b.WriteString("{")
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		b.WriteString(f.Name + " " + f.Tag.Get("json") + " ")
		describe(b, f.Type, seen)
	}
	b.WriteString("}")
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

// TestFingerprint: the constant is the hash of the protocol as this
// checkout defines it.
func TestFingerprint(t *testing.T) {
	if got := hashOf(describeProtocol()); got != Fingerprint() {
		t.Fatalf("boxconf's protocol changed (a type, a flag, the walls' encoding or Revision): set fingerprint in sandbox/boxconf/fingerprint.go to %q (it is %q)", got, Fingerprint())
	}
}

// TestFingerprintSeesChanges: the description the hash is of changes with
// a field's name, its JSON name or its type, with a flag and with the
// revision, so no such change keeps the old constant.
func TestFingerprintSeesChanges(t *testing.T) {
	shape := func(v any) string {
		var b strings.Builder
		describe(&b, reflect.TypeOf(v), map[reflect.Type]bool{})
		return b.String()
	}
	// Unnamed structs: only their fields tell them apart.
	base := shape(struct {
		Write []string `json:"write,omitempty"`
	}{})
	others := map[string]any{
		"renamed field": struct {
			Writes []string `json:"write,omitempty"`
		}{},
		"other JSON name": struct {
			Write []string `json:"writes,omitempty"`
		}{},
		"other type": struct {
			Write []byte `json:"write,omitempty"`
		}{},
		"field added": struct {
			Write []string `json:"write,omitempty"`
			Exec  bool     `json:"exec"`
		}{},
	}
	for name, v := range others {
		if shape(v) == base {
			t.Errorf("%s: describes the same as the original (%s)", name, base)
		}
	}
	if !strings.Contains(describeProtocol(), "rev "+strconv.Itoa(Revision)+";") || !strings.Contains(describeProtocol(), wallsMagic) ||
		!strings.Contains(describeProtocol(), hex.EncodeToString(EncodeWalls(&Walls{Seccomp: true}))) {
		t.Errorf("the description leaves out the revision, the walls' magic or their layout: %q", describeProtocol()[:80])
	}
}
