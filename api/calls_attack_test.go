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

// An open job holds its kernel, and a slot of its node, while it waits
// for calls: it cannot ask to wait past its run, nor run for longer than
// the server allows, so no lease is held for ever.
func TestAttackLeaseForever(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"an idle timeout of ten years", `{"open":true,"idle_timeout":"87600h"}`, "idle_timeout 87600h0m0s: over the job's run timeout 1h0m0s"},
		{"a run timeout of ten years", `{"open":true,"run_timeout":"87600h","idle_timeout":"87000h"}`, "run_timeout 87600h0m0s: at most 24h0m0s"},
		{"a closed job's run of ten years", `{"argv":["sleep","inf"],"run_timeout":"87600h"}`, "run_timeout 87600h0m0s: at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := serveCalls(t)
			code, out := do(t, s, "POST", "/v1/jobs", "Bearer "+token, tc.body)
			if code != http.StatusBadRequest || !strings.Contains(out["error"].(string), tc.want) {
				t.Fatalf("got %d %v, want 400 saying %q", code, out, tc.want)
			}
		})
	}
	s, _ := serveCalls(t)
	if code, out := do(t, s, "POST", "/v1/jobs", "Bearer "+token, `{"open":true,"run_timeout":"8h","idle_timeout":"2h"}`); code != http.StatusCreated {
		t.Errorf("an idle timeout within the run: %d %v, want it taken", code, out)
	}
}
