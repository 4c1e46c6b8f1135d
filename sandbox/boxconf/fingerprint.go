package boxconf

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Revision is bumped when the in-box code's reading of this protocol
// changes while its types stay the same (what a field means, an order of
// steps the host relies on).
const Revision = 1

// Fingerprint names this build's protocol: a hash of Revision, the flags
// and every type that crosses into the box or back, field by field with
// its JSON name. The host sends it with the configuration and the walls
// (Config.Proto, Walls.Proto); the in-box code refuses any other, so an
// airlock-box left from another build than the airlock binary that
// planned the box fails closed, naming the fix, instead of reading the
// plan its own way (an older one would drop a field it does not know,
// and with it a wall).
func Fingerprint() string { return fingerprint() }

var fingerprint = sync.OnceValue(func() string {
	var b strings.Builder
	b.WriteString("rev " + strconv.Itoa(Revision) + ";")
	for _, f := range []string{FlagConfig, FlagStatus, FlagExecWall, FlagSeal, FlagServe, FlagScratch, GVisorLaunchArg} {
		b.WriteString(f + ";")
	}
	seen := map[reflect.Type]bool{}
	for _, v := range []any{Config{}, Status{}, Ready{}, Call{}, CallDone{}, GVisorSource{}} {
		describe(&b, reflect.TypeOf(v), seen)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:12])
})

// AccessWord is Walls.Access for the file-system rights fs and the scopes
// a Landlock ruleset handles.
func AccessWord(fs, scoped uint64) string {
	return strconv.FormatUint(fs, 16) + " " + strconv.FormatUint(scoped, 16)
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
