package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// fakeJobs keeps the jobs it was asked to start and the signals sent.
type fakeJobs struct {
	mu      sync.Mutex
	started []jobs.Job
	asked   []jobs.Question
	answers []jobs.Answer
	// ended, when set, is how every job ends (Wait returns it at once);
	// nil makes Wait block until the server closes.
	ended *jobs.Status
	// known are jobs started before the server (Get finds them).
	known []jobs.Job
	// killed are the jobs Kill was asked to cancel.
	killed []string
}

func (f *fakeJobs) Ask(_ context.Context, id string, q jobs.Question) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, q)
	return nil
}

// Questions are the questions asked of job id, as its workflow would
// hold them (30 s from now).
func (f *fakeJobs) Questions(_ context.Context, id string) ([]jobs.Question, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []jobs.Question{}
	for _, q := range f.asked {
		if q.Job == id {
			q.Deadline = time.Now().Add(30 * time.Second)
			out = append(out, q)
		}
	}
	return out, nil
}

func (f *fakeJobs) Answer(_ context.Context, id string, a jobs.Answer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, a)
	return nil
}

func (f *fakeJobs) Start(_ context.Context, j jobs.Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, j)
	return nil
}

// Summary is Get's summary.
func (f *fakeJobs) Summary(ctx context.Context, id string) (jobs.Summary, error) {
	st, err := f.Get(ctx, id)
	return st.Summary, err
}

// Get finds a started job, or one of known, as running; any other id is
// not found, in jobs.Client.Get's words.
func (f *fakeJobs) Get(_ context.Context, id string) (jobs.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range append(f.known, f.started...) {
		if j.ID == id {
			return jobs.Status{ID: j.ID, State: "running", Summary: j.Summary()}, nil
		}
	}
	return jobs.Status{}, errs.NotFoundf("job %s: not found", id)
}
func (f *fakeJobs) Wait(ctx context.Context, id string) (jobs.Status, error) {
	f.mu.Lock()
	ended := f.ended
	f.mu.Unlock()
	if ended != nil {
		st := *ended
		st.ID = id
		return st, nil
	}
	<-ctx.Done()
	return jobs.Status{}, ctx.Err()
}
func (f *fakeJobs) Kill(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, id)
	return nil
}

// List lists what was started, running, with the summary a start records.
func (f *fakeJobs) List(_ context.Context, running bool) ([]jobs.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []jobs.Status
	for _, j := range f.started {
		out = append(out, jobs.Status{ID: j.ID, State: "running", Summary: j.Summary()})
	}
	return out, nil
}

// KillAgent names the started jobs of agent that mine accepts.
func (f *fakeJobs) KillAgent(_ context.Context, agent string, mine func(jobs.Summary) bool) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, j := range f.started {
		if j.Agent == agent && mine(j.Summary()) {
			out = append(out, j.ID)
		}
	}
	return out, nil
}

const token = "0123456789abcdef0123456789abcdef"

// jobOne is the default tenant's job j-1, started before the server, that
// the approval tests raise questions of.
var jobOne = jobs.Job{ID: "j-1", Pool: jobs.DefaultPool, Tenant: jobs.DefaultTenant}

func serve(t *testing.T, cfg Config) (*httptest.Server, *fakeJobs) {
	f := &fakeJobs{known: []jobs.Job{jobOne}}
	cfg.Jobs = f
	if cfg.Token == "" {
		cfg.Token = token
	}
	a := New(cfg)
	s := httptest.NewServer(a.Handler())
	t.Cleanup(s.Close)
	t.Cleanup(a.Close)
	return s, f
}

func do(t *testing.T, s *httptest.Server, method, path, auth, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestToken(t *testing.T) {
	s, f := serve(t, Config{})
	tests := []struct {
		name, auth string
		want       int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong", "Bearer " + strings.Repeat("x", len(token)), http.StatusUnauthorized},
		{"a prefix of it", "Bearer " + token[:10], http.StatusUnauthorized},
		{"not bearer", "Basic " + token, http.StatusUnauthorized},
		{"right", "Bearer " + token, http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _ := do(t, s, http.MethodPost, "/v1/jobs", tt.auth, `{"argv":["true"]}`)
			if code != tt.want {
				t.Errorf("got %d, want %d", code, tt.want)
			}
		})
	}
	if len(f.started) != 1 {
		t.Errorf("started %d jobs, want only the authorized one", len(f.started))
	}
	t.Run("an empty server token refuses everything", func(t *testing.T) {
		s := httptest.NewServer(New(Config{Jobs: &fakeJobs{}}).Handler())
		defer s.Close()
		if code, _ := do(t, s, http.MethodGet, "/v1/nodes", "Bearer ", ""); code != http.StatusUnauthorized {
			t.Errorf("got %d, want 401", code)
		}
	})
}

func TestStartJob(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantCode  int
		wantQueue string
		check     func(t *testing.T, j jobs.Job)
	}{
		{name: "a command is floor work", body: `{"argv":["make"]}`, wantCode: 201, wantQueue: "floor.default"},
		{name: "tier-0 consent", body: `{"pool":"ci","argv":["make"],"tier0":true}`, wantCode: 201, wantQueue: "ci"},
		{name: "a job may wait less than the server's claim timeout", body: `{"argv":["make"],"claim_timeout":"2s"}`, wantCode: 201,
			wantQueue: "floor.default", check: func(t *testing.T, j jobs.Job) {
				if j.ClaimTimeout != 2*time.Second {
					t.Errorf("claim timeout %s, want 2s", j.ClaimTimeout)
				}
			}},
		{name: "never longer", body: `{"argv":["make"],"claim_timeout":"100h"}`, wantCode: 201,
			wantQueue: "floor.default", check: func(t *testing.T, j jobs.Job) {
				if j.ClaimTimeout != time.Minute {
					t.Errorf("claim timeout %s, want the server's 1m", j.ClaimTimeout)
				}
			}},
		{name: "a start request cannot taint or untaint, nor name its source", body: `{"argv":["make"],"tainted":false,"source":"person"}`, wantCode: 400},
		{name: "a pool that spells a floor queue", body: `{"pool":"floor.ci","argv":["make"]}`, wantCode: 400},
		{name: "no command", body: `{}`, wantCode: 400},
		{name: "two values", body: `{"argv":["a"]}{"argv":["b"]}`, wantCode: 400},
		{name: "a bad duration", body: `{"argv":["a"],"claim_timeout":"soon"}`, wantCode: 400},
		{name: "an agent and retries of an idempotent job", body: `{"argv":["make"],"agent":"bot-1","idempotent":true,"retries":2}`, wantCode: 201,
			wantQueue: "floor.default", check: func(t *testing.T, j jobs.Job) {
				if j.Agent != "bot-1" || !j.Idempotent || j.Retries != 2 {
					t.Errorf("started %+v, want agent bot-1, idempotent, 2 retries", j)
				}
			}},
		{name: "retries of a job not marked idempotent", body: `{"argv":["make"],"retries":1}`, wantCode: 400},
		{name: "an agent that is not a name", body: `{"argv":["make"],"agent":"../x"}`, wantCode: 400},
		{name: "retries that are not a number", body: `{"argv":["make"],"idempotent":true,"retries":"2"}`, wantCode: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := serve(t, Config{ClaimTimeout: time.Minute})
			code, out := do(t, s, http.MethodPost, "/v1/jobs", "Bearer "+token, tt.body)
			if code != tt.wantCode {
				t.Fatalf("got %d %v, want %d", code, out, tt.wantCode)
			}
			if tt.wantCode != 201 {
				if len(f.started) != 0 {
					t.Errorf("started %d jobs, want none", len(f.started))
				}
				return
			}
			if out["queue"] != tt.wantQueue || len(f.started) != 1 {
				t.Fatalf("got %v (%d started), want queue %s", out, len(f.started), tt.wantQueue)
			}
			if j := f.started[0]; j.Tainted || j.Source != "person" || j.ID != out["id"] {
				t.Errorf("started %+v", j)
			}
			if tt.check != nil {
				tt.check(t, f.started[0])
			}
		})
	}
}

func TestHook(t *testing.T) {
	s, f := serve(t, Config{Hooks: map[string]Hook{"deploy": {Pool: "ci", Argv: []string{"cat"}}}})
	registerNode(t, s, "n1", "ci", 1)
	code, out := do(t, s, http.MethodPost, "/v1/hooks/deploy", "Bearer "+token, "text from outside")
	if code != http.StatusCreated || out["queue"] != "floor.ci" {
		t.Fatalf("got %d %v", code, out)
	}
	j := f.started[0]
	if !j.Tainted || j.Floor() != 1 || j.Source != "hook:deploy" || j.Input != "text from outside" {
		t.Errorf("started %+v, want a tainted tier-1 job with the body as its input", j)
	}
	if code, _ := do(t, s, http.MethodPost, "/v1/hooks/other", "Bearer "+token, ""); code != http.StatusNotFound {
		t.Errorf("an unknown hook: got %d, want 404", code)
	}
}

func TestNodes(t *testing.T) {
	var now atomic.Int64 // seconds; the handlers read it on their goroutines
	now.Store(1000)
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	s, _ := serve(t, Config{Temporal: "127.0.0.1:7233", Namespace: "airlock", Now: clock, NodeTTL: 10 * time.Second})
	code, out := do(t, s, http.MethodPost, "/v1/nodes", "Bearer "+token, `{"id":"n1","pool":"ci","tier":1,"queues":["ci","floor.ci","node.n1"]}`)
	if code != 200 || out["temporal"] != "127.0.0.1:7233" {
		t.Fatalf("register: %d %v", code, out)
	}
	for _, bad := range []string{`{"id":"n/1","pool":"ci","tier":1}`, `{"id":"n2","pool":"ci","tier":7}`, `{"id":"n2","pool":"floor.ci","tier":1}`} {
		if code, _ := do(t, s, http.MethodPost, "/v1/nodes", "Bearer "+token, bad); code != 400 {
			t.Errorf("register %s: got %d, want 400", bad, code)
		}
	}
	list := func() []NodeEntry {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/nodes", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l []NodeEntry
		json.NewDecoder(resp.Body).Decode(&l)
		return l
	}
	if l := list(); len(l) != 1 || !l[0].Live || l[0].Tier != 1 {
		t.Fatalf("nodes: %+v", l)
	}
	now.Add(11)
	if l := list(); len(l) != 1 || l[0].Live {
		t.Errorf("a node silent past its TTL: %+v, want it listed as not live", l)
	}
}

// TestAgentKillAndList: the list is the fleet's (each job's summary as its
// start recorded it), and the kill switch cancels the agent's jobs only.
func TestAgentKillAndList(t *testing.T) {
	s, _ := serve(t, Config{})
	for _, body := range []string{`{"argv":["a"],"agent":"bot-1"}`, `{"argv":["b"],"agent":"bot-2"}`, `{"argv":["c"],"agent":"bot-1"}`} {
		if code, out := do(t, s, http.MethodPost, "/v1/jobs", "Bearer "+token, body); code != 201 {
			t.Fatalf("start %s: %d %v", body, code, out)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/jobs", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list []JobView
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list) != 3 || list[0].Agent != "bot-1" || list[0].Command != "a" || list[0].Queue != "floor.default" || list[0].Floor != 1 {
		t.Fatalf("list: %+v", list)
	}
	code, out := do(t, s, http.MethodPost, "/v1/agents/bot-1/kill", "Bearer "+token, "")
	if code != http.StatusAccepted || out["agent"] != "bot-1" {
		t.Fatalf("kill: %d %v", code, out)
	}
	if got, _ := out["jobs"].([]any); len(got) != 2 || got[0] != list[0].ID || got[1] != list[2].ID {
		t.Errorf("killed %v, want bot-1's two jobs %s %s", out["jobs"], list[0].ID, list[2].ID)
	}
	for _, bad := range []string{"/v1/agents/Bot/kill", "/v1/agents/a.b/kill"} {
		if code, _ := do(t, s, http.MethodPost, bad, "Bearer "+token, ""); code != 400 {
			t.Errorf("POST %s: got %d, want 400", bad, code)
		}
	}
	if code, _ := do(t, s, http.MethodGet, "/v1/jobs?running=yes", "Bearer "+token, ""); code != 400 {
		t.Errorf("GET /v1/jobs?running=yes: got %d, want 400", code)
	}
}

// TestMalformedRequest: a malformed body is a 400 naming the field that
// is wrong, never a 500 or Go's own words.
func TestMalformedRequest(t *testing.T) {
	tests := []struct {
		name, path, body, want string
	}{
		{"a number as a string", "/v1/jobs", `{"argv":["make"],"idempotent":true,"retries":"2"}`, `field "retries": got a JSON string, want a number`},
		{"a string as an array", "/v1/jobs", `{"argv":"make"}`, `field "argv": got a JSON string, want an array`},
		{"a bool as a number", "/v1/jobs", `{"argv":["make"],"tier0":1}`, `field "tier0": got a JSON number, want true or false`},
		{"an unknown field", "/v1/jobs", `{"argv":["make"],"owner":"x"}`, `field "owner": not a field of this route`},
		{"not JSON", "/v1/jobs", `{"argv":`, "the body is not JSON"},
		{"no body", "/v1/jobs", ``, "the body is empty"},
		{"an array, not an object", "/v1/jobs", `[1]`, "the body: got a JSON array, want an object"},
		{"a bad duration", "/v1/jobs", `{"argv":["a"],"run_timeout":"-1s"}`, `run_timeout "-1s"`},
		{"a bad mode", "/v1/jobs", `{"argv":["a"],"mode":"yolo"}`, `mode "yolo"`},
		{"a bad tier", "/v1/nodes", `{"id":"n1","pool":"ci","tier":"1"}`, `field "tier": got a JSON string, want a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, f := serve(t, Config{})
			code, out := do(t, s, http.MethodPost, tt.path, "Bearer "+token, tt.body)
			msg, _ := out["error"].(string)
			if code != http.StatusBadRequest || !strings.Contains(msg, tt.want) || strings.Contains(msg, "Go struct") {
				t.Errorf("got %d %q, want 400 naming %q", code, msg, tt.want)
			}
			if len(f.started) != 0 {
				t.Errorf("a malformed request started %d jobs", len(f.started))
			}
		})
	}
}
