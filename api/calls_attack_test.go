package api

import (
	"net/http"
	"strings"
	"testing"
)

// A call's id is the server's: a caller naming one could name another
// call's, and read that call's result as its own (or have the job run it
// as that call). Every call added gets a fresh id; a body naming one is
// refused, and nothing is signalled.
func TestAttackCallerNamesTheCallID(t *testing.T) {
	s, f := serveCalls(t)
	code, first := do(t, s, "POST", "/v1/jobs/j-open/calls", "Bearer "+token, `{"kind":"read_file","path":"out.txt"}`)
	if code != http.StatusOK {
		t.Fatalf("first call: %d %v", code, first)
	}
	id := first["call"].(string)
	code, out := do(t, s, "POST", "/v1/jobs/j-open/calls", "Bearer "+token, `{"id":"`+id+`","kind":"list","path":"."}`)
	if code != http.StatusBadRequest {
		t.Fatalf("a call under the first one's id: got %d %v, want 400 (its answer is the first call's result)", code, out)
	}
	if msg, _ := out["error"].(string); !strings.Contains(msg, `"id"`) {
		t.Errorf("error: got %q, want it to name the field id", msg)
	}
	if len(f.calls) != 1 {
		t.Errorf("signalled %+v, want the first call only", f.calls)
	}
}
