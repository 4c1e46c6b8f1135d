package boxinit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// TestReadWalls: the exec step reads walls of its own encoding and
// protocol; walls of another build (another fingerprint, or the JSON an
// older host wrote) are refused naming the fix, and a malformed encoding
// is refused; nothing of such walls is returned.
func TestReadWalls(t *testing.T) {
	w := &boxconf.Walls{Proto: boxconf.Fingerprint(), Access: "7ff2 3", Write: []string{"/tmp"}, Scope: true,
		Env: []string{"PATH=/usr/bin:/bin", "BIG=" + strings.Repeat("x", 200<<10)}}
	good := boxconf.EncodeWalls(w)
	other := *w
	other.Proto = "0123"
	asJSON, _ := json.Marshal(w)
	tests := []struct {
		name string
		data []byte
		want string // "" for accepted
	}{
		{"this build's, larger than a pipe", good, ""},
		{"another fingerprint", boxconf.EncodeWalls(&other), "of another build"},
		{"the JSON of an older host", asJSON, "of another build"},
		{"cut short", good[:len(good)-1], "walls: byte"},
		{"nothing", nil, "of another build"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readWalls(pipeFD(t, tc.data))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && !reflect.DeepEqual(got.Env, w.Env):
				t.Fatalf("read other walls (protocol %q, %d entries)", got.Proto, len(got.Env))
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a refusal saying %q", err, tc.want)
			case tc.want != "" && (got.Write != nil || got.Proto != ""):
				t.Fatalf("a refusal returned walls (protocol %q)", got.Proto)
			}
		})
	}
}

// TestReadWallsBounded: walls beyond maxWalls are refused, not read on.
func TestReadWallsBounded(t *testing.T) {
	_, err := readWalls(pipeFD(t, make([]byte, maxWalls+4096)))
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("got %v, want a refusal of walls too large", err)
	}
}
