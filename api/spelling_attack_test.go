package api

import (
	"net/http"
	"testing"

	"github.com/airlock-run/airlock/jobs"
)

// Another tenant's open job must not be reached by a spelling of its id
// that some layer (the router, a decoder, the fleet) would read as the
// same job: case, padding, percent-encoding, dot segments.
func TestAttackCallRouteIDSpellings(t *testing.T) {
	s, f := serveTenantCalls(t)
	for _, id := range []string{"J-OPEN", "j-open%20", "%20j-open", "%6A-open", "j-open%00", "j-open%2F", "..%2Fj-open",
		"j-open%2F..", ".%2Fj-open", "j%2Dopen", "j-open%0A", "j-ope%C5%84", "j-open."} {
		for _, route := range []struct{ method, tail, body string }{
			{"POST", "/calls", `{"kind":"exec","argv":["true"]}`},
			{"POST", "/release", ""},
			{"GET", "/trace", ""},
			{"POST", "/kill", ""},
			{"GET", "", ""},
		} {
			t.Run(id+route.tail, func(t *testing.T) {
				code, got := rawTenant(t, s, route.method, "/v1/jobs/"+id+route.tail, betaToken, route.body)
				if code != http.StatusNotFound && code != http.StatusBadRequest {
					t.Errorf("beta on %q: %d %s; want 404 or 400", id, code, got)
				}
			})
		}
	}
	if len(f.calls) != 0 || len(f.released) != 0 {
		t.Errorf("calls %v released %v reached default's job through another tenant's spelling", f.calls, f.released)
	}
}

// A tier-0 job that read a tainted job's result after its start must not
// hand tier 0 on: a child it starts with tier0 (write_file and tool calls,
// an open lease whose later calls are shell) is tainted and floor work.
func TestAttackTier0ChildOfReadTaintedParent(t *testing.T) {
	f := newFileFleet(t, t.TempDir(), nil)
	root := f.start(t, `{"open":true,"tier0":true}`)
	if root.Floor != 0 {
		t.Fatalf("root %+v: want floor 0 (consented)", root)
	}
	tj := f.start(t, `{"argv":["fetch"],"parent":"`+root.ID+`","model":"unvetted-model","tier0":true}`)
	if tj.Floor != 1 || !tj.Tainted {
		t.Fatalf("an unvetted model's job asking tier0: %+v, want tainted at floor 1", tj)
	}
	ref := f.keep(t, token, tj.ID, "text from an outside page")
	if code, body, hdr := raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+root.ID, token, ""); code != http.StatusOK || hdr.Get(TaintHeader) == "" {
		t.Fatalf("read for root: %d %q", code, body)
	}
	for _, body := range []string{
		`{"tier0":true,"parent":"` + root.ID + `","calls":[{"kind":"write_file","path":"x","content":"y"}]}`,
		`{"tier0":true,"parent":"` + root.ID + `","open":true,"mcp":{"fs":["srv"]},"calls":[{"kind":"tool","server":"fs","tool":"t","args":{}}]}`,
		`{"tier0":true,"parent":"` + root.ID + `","open":true}`,
	} {
		if c := f.start(t, body); c.Floor != 1 || !c.Tainted || c.Queue != jobs.FloorQueue("default") {
			t.Errorf("child %s: %+v, want tainted floor work", body, c)
		}
	}
}
