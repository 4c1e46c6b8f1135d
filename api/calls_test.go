package api

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// callFleet is a fleet with two running jobs, "j-open" (open) and
// "j-closed", whose calls end at once with their kind as text.
type callFleet struct {
	*fakeJobs
	mu       sync.Mutex
	calls    []jobs.Call
	released []string
}

func (f *callFleet) Get(_ context.Context, id string) (jobs.Status, error) {
	switch id {
	case "j-open":
		return jobs.Status{ID: id, State: "running", Summary: jobs.Summary{Pool: "ci", Tenant: jobs.DefaultTenant, Open: true, MCP: []string{"fs"}}}, nil
	case "j-closed":
		return jobs.Status{ID: id, State: "running", Summary: jobs.Summary{Pool: "ci", Tenant: jobs.DefaultTenant}}, nil
	}
	return jobs.Status{}, errs.NotFoundf("job %s: not found", id)
}

// Summary is Get's summary, as the tenant check reads it.
func (f *callFleet) Summary(ctx context.Context, id string) (jobs.Summary, error) {
	st, err := f.Get(ctx, id)
	return st.Summary, err
}

func (f *callFleet) Call(_ context.Context, id string, c jobs.Call) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return nil
}

func (f *callFleet) CallResult(_ context.Context, id, call string) (jobs.CallResult, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.ID == call {
			return jobs.CallResult{Call: c.ID, Kind: c.Kind, Node: "n1", Tier: 1, Text: c.Kind}, true, nil
		}
	}
	return jobs.CallResult{}, false, nil
}

func (f *callFleet) Release(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, id)
	return nil
}

func (f *callFleet) Trace(_ context.Context, id string) (jobs.Trace, error) {
	return jobs.Trace{Job: id, Nodes: []string{"n1"}, LowestTier: 1, Calls: []jobs.CallRecord{{ID: "c1", Kind: "exec", Call: "make", Node: "n1", Tier: 1}}}, nil
}

func serveCalls(t *testing.T) (*httptest.Server, *callFleet) {
	f := &callFleet{fakeJobs: &fakeJobs{}}
	a := New(Config{Token: token, Jobs: f})
	s := httptest.NewServer(a.Handler())
	t.Cleanup(s.Close)
	t.Cleanup(a.Close)
	return s, f
}

func TestStartWithCalls(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		want     int
		wantErr  string
		wantOpen bool
	}{
		{"three calls", `{"pool":"ci","calls":[{"kind":"exec","argv":["make"]},{"kind":"write_file","path":"a","content":"x"},{"kind":"read_file","path":"a"}]}`, 201, "", false},
		{"an open job with no call", `{"pool":"ci","open":true,"idle_timeout":"30s"}`, 201, "", true},
		{"a call missing its field", `{"pool":"ci","calls":[{"kind":"exec"}]}`, 400, "calls[0]: call : argv: empty", false},
		{"a call of an unknown kind", `{"pool":"ci","calls":[{"kind":"fetch","path":"a"}]}`, 400, `kind "fetch"`, false},
		{"a call with a field not of it", `{"pool":"ci","calls":[{"kind":"read_file","path":"a","argv":["x"]}]}`, 400, "argv: not a field of a read_file call", false},
		{"a call with an unknown field", `{"pool":"ci","calls":[{"kind":"read_file","path":"a","mode":"x"}]}`, 400, `field "mode": not a field`, false},
		{"a call's key given twice", `{"pool":"ci","calls":[{"kind":"read_file","path":"a","Path":"/etc/shadow"}]}`, 400, "calls.Path: the key is given twice", false},
		{"calls and a command", `{"pool":"ci","argv":["ls"],"calls":[{"kind":"list"}]}`, 400, "calls: given with a command", false},
		{"an idle timeout on a closed job", `{"pool":"ci","argv":["ls"],"idle_timeout":"1m"}`, 400, "idle_timeout: only an open job", false},
		{"a bad idle timeout", `{"pool":"ci","open":true,"idle_timeout":"soon"}`, 400, `idle_timeout "soon"`, false},
		{"a tool call to a server of the job", `{"pool":"ci","open":true,"mcp":{"fs":["mcp-fs","."]},"calls":[{"kind":"tool","server":"fs","tool":"read_file","args":{"path":"a"}}]}`, 201, "", true},
		{"a tool call to a server not of the job", `{"pool":"ci","open":true,"mcp":{"fs":["mcp-fs"]},"calls":[{"kind":"tool","server":"web","tool":"get"}]}`, 400, `calls[0]: server "web": not one of the job's MCP servers`, false},
		{"a server without a command", `{"pool":"ci","open":true,"mcp":{"fs":[]}}`, 400, "mcp: server fs: empty command", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := serveCalls(t)
			code, out := do(t, s, "POST", "/v1/jobs", "Bearer "+token, tt.body)
			if code != tt.want {
				t.Fatalf("got %d %v, want %d", code, out, tt.want)
			}
			if tt.wantErr != "" {
				if msg, _ := out["error"].(string); !strings.Contains(msg, tt.wantErr) {
					t.Fatalf("error: got %q, want it to name %q", msg, tt.wantErr)
				}
				return
			}
			j := f.started[0]
			if j.Open != tt.wantOpen || (!tt.wantOpen && len(j.Calls) != 3) {
				t.Fatalf("started %+v", j)
			}
		})
	}
}

func TestAddCall(t *testing.T) {
	tests := []struct {
		name, path, body string
		want             int
		wantErr          string
	}{
		{"a call of an open job answers its result", "/v1/jobs/j-open/calls", `{"kind":"read_file","path":"out.txt"}`, 200, ""},
		{"a call of a job not open", "/v1/jobs/j-closed/calls", `{"kind":"read_file","path":"out.txt"}`, 409, "job j-closed is not open"},
		{"a call of no job", "/v1/jobs/j-none/calls", `{"kind":"read_file","path":"out.txt"}`, 404, "not found"},
		{"a malformed call", "/v1/jobs/j-open/calls", `{"kind":"write_file"}`, 400, "path: empty"},
		{"an unknown field", "/v1/jobs/j-open/calls", `{"kind":"list","host":"x"}`, 400, `field "host"`},
		{"a bad wait", "/v1/jobs/j-open/calls?wait=forever", `{"kind":"list"}`, 400, `wait "forever"`},
		{"a tool call to a server not of the job", "/v1/jobs/j-open/calls", `{"kind":"tool","server":"web","tool":"get"}`, 400, `server "web": not one of job j-open's MCP servers`},
		{"a tool call without a tool", "/v1/jobs/j-open/calls", `{"kind":"tool","server":"fs"}`, 400, "tool: empty"},
		{"a tool call whose args are not an object", "/v1/jobs/j-open/calls", `{"kind":"tool","server":"fs","tool":"t","args":[1]}`, 400, "args: not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := serveCalls(t)
			code, out := do(t, s, "POST", tt.path, "Bearer "+token, tt.body)
			if code != tt.want {
				t.Fatalf("got %d %v, want %d", code, out, tt.want)
			}
			if tt.wantErr != "" {
				if msg, _ := out["error"].(string); !strings.Contains(msg, tt.wantErr) {
					t.Fatalf("error: got %q, want it to name %q", msg, tt.wantErr)
				}
				if len(f.calls) != 0 {
					t.Errorf("a refused call was signalled: %+v", f.calls)
				}
				return
			}
			if out["text"] != "read_file" || out["node"] != "n1" || !strings.HasPrefix(out["call"].(string), "c-") {
				t.Fatalf("result: got %v", out)
			}
		})
	}
}

func TestReleaseAndTrace(t *testing.T) {
	s, f := serveCalls(t)
	if code, out := do(t, s, "POST", "/v1/jobs/j-closed/release", "Bearer "+token, ""); code != 409 {
		t.Errorf("release of a job not open: got %d %v, want 409", code, out)
	}
	if code, _ := do(t, s, "POST", "/v1/jobs/j-open/release", "Bearer "+token, ""); code != 202 || len(f.released) != 1 {
		t.Errorf("release: got %d, released %v", code, f.released)
	}
	code, out := do(t, s, "GET", "/v1/jobs/j-open/trace", "Bearer "+token, "")
	if code != 200 || out["job"] != "j-open" || out["lowest_tier"] != float64(1) {
		t.Errorf("trace: got %d %v", code, out)
	}
	if code, _ := do(t, s, "GET", "/v1/jobs/j-open/trace", "", ""); code != 401 {
		t.Errorf("trace without a token: got %d, want 401", code)
	}
}

// TestCallsHeldToTenant: another tenant's token cannot add a call to,
// release or trace a job, and is answered as for a job that does not
// exist; the job's own tenant can.
// serveTenantCalls is a call fleet whose jobs are the default tenant's,
// served to it and to tenant beta.
func serveTenantCalls(t *testing.T) (*httptest.Server, *callFleet) {
	f := &callFleet{fakeJobs: &fakeJobs{}}
	a := New(Config{Token: token, Jobs: f, Tenants: []Tenant{{Name: "beta", Token: betaToken}}})
	s := httptest.NewServer(a.Handler())
	t.Cleanup(s.Close)
	t.Cleanup(a.Close)
	return s, f
}

func TestCallsHeldToTenant(t *testing.T) {
	s, f := serveTenantCalls(t)
	for _, tc := range []struct{ name, method, path, body string }{
		{"add a call", "POST", "/v1/jobs/j-open/calls", `{"kind":"exec","argv":["true"]}`},
		{"release", "POST", "/v1/jobs/j-open/release", ""},
		{"trace", "GET", "/v1/jobs/j-open/trace", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got := rawTenant(t, s, tc.method, tc.path, betaToken, tc.body)
			ucode, want := rawTenant(t, s, tc.method, strings.Replace(tc.path, "j-open", "j-nosuch", 1), betaToken, tc.body)
			if code != 404 || ucode != 404 || strings.ReplaceAll(got, "j-open", "ID") != strings.ReplaceAll(want, "j-nosuch", "ID") {
				t.Errorf("beta on default's job: %d %s; on an unknown job: %d %s; want the same 404", code, got, ucode, want)
			}
			if code, got := rawTenant(t, s, tc.method, tc.path, token, tc.body); code == 404 {
				t.Errorf("the job's own tenant: %d %s", code, got)
			}
		})
	}
	if len(f.calls) != 1 || len(f.released) != 1 {
		t.Errorf("calls %v released %v: want only the own tenant's one each", f.calls, f.released)
	}
}
