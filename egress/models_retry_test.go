package egress_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
)

// fakeProvider is a model provider on loopback TLS whose answers a test
// scripts: answer n (from 0) is script(n, w, r); requests are counted.
type fakeProvider struct {
	mu     sync.Mutex
	n      int
	keys   []string
	bodies []string
}

func (f *fakeProvider) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// modelStack is a proxy whose model proxy reaches one fake provider under
// the name "openai" (Authorization: Bearer) and "anthropic" (X-Api-Key),
// with base URLs from the forwarder's environment.
type modelStack struct {
	*stack
	prov    *fakeProvider
	client  *http.Client
	openai  string
	anthro  string
	budget  *egress.TokenBudget
	realKey string
	root    *testRoot
	port    int
}

func newModelStack(t testing.TB, budget *egress.TokenBudget, script func(n int, w http.ResponseWriter, r *http.Request)) *modelStack {
	return newModelStackAllow(t, budget, func(string) bool { return true }, script)
}

// newModelStackAllow is newModelStack with models.allow decided by allow.
func newModelStackAllow(t testing.TB, budget *egress.TokenBudget, allow func(string) bool, script func(n int, w http.ResponseWriter, r *http.Request), more ...func(*egress.Options)) *modelStack {
	t.Helper()
	root := newTestRoot(t)
	f := &fakeProvider{}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{root.leaf(t, "models.test")}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := f.n
		f.n++
		f.keys = append(f.keys, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		f.bodies = append(f.bodies, r.Method+" "+r.URL.Path+" "+string(body))
		f.mu.Unlock()
		script(n, w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := int(netip.MustParseAddrPort(ln.Addr().String()).Port())
	const key = "sk-proj-RealModelKey0123456789abcdefghij"
	o := policyOpts(t, nil, nil)
	o.Resolver = newResolver(map[string][]string{"models.test": {"127.0.0.1"}})
	o.AllowAddr = func(a netip.Addr, p int) (bool, string) { return a.IsLoopback() && p == port, "test" }
	o.UpstreamRoots = root.pool
	o.Models = &egress.Models{
		Allow: allow,
		Providers: map[string]egress.Provider{
			"openai":    {Host: "models.test", Port: port, Key: key, Header: "Authorization", Prefix: "Bearer "},
			"anthropic": {Host: "models.test", Port: port, Key: key, Header: "X-Api-Key"},
		},
		Budget: budget,
	}
	for _, f := range more {
		f(&o)
	}
	s := newStack(t, o)
	ms := &modelStack{stack: s, prov: f, budget: budget, realKey: key, root: root, port: port}
	for _, kv := range s.env {
		if v, ok := strings.CutPrefix(kv, "OPENAI_BASE_URL="); ok {
			ms.openai = v
		}
		if v, ok := strings.CutPrefix(kv, "ANTHROPIC_BASE_URL="); ok {
			ms.anthro = v
		}
	}
	pu, _ := url.Parse("http://" + s.httpAddr)
	ms.client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	return ms
}

// ask posts a model request through the proxy and returns the answer.
func (m *modelStack) ask(t testing.TB, u, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := m.client.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestModelRateLimit: a 429 whose reset is stated in any of the headers
// providers use is waited out and the same request sent again; a 429
// without a stated reset, one whose reset lies past the bound, the last
// of the allowed attempts, and any other failure reach the box as the
// provider sent them.
func TestModelRateLimit(t *testing.T) {
	limited := func(h map[string]string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			for k, v := range h {
				// A time is written as an offset from now, "+2s", so it is
				// read when the answer is sent.
				if d, err := time.ParseDuration(strings.TrimPrefix(v, "+")); err == nil && strings.HasPrefix(v, "+") {
					at := time.Now().Add(d).UTC()
					v = at.Format(time.RFC3339)
					if k == "Retry-After" {
						v = at.Format(http.TimeFormat)
					}
				}
				w.Header().Set(k, v)
			}
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
		}
	}
	ok := func(w http.ResponseWriter) {
		io.WriteString(w, `{"ok":true,"usage":{"input_tokens":1,"output_tokens":1}}`)
	}
	for _, tc := range []struct {
		name     string
		first    func(http.ResponseWriter)
		always   bool // every answer is first's
		wantCode int
		wantReqs int
		minWait  time.Duration
	}{
		{"retry-after seconds", limited(map[string]string{"Retry-After": "1"}), false, 200, 2, time.Second},
		{"retry-after date", limited(map[string]string{"Retry-After": "+2s"}), false, 200, 2, 500 * time.Millisecond},
		{"openai reset duration", limited(map[string]string{"X-Ratelimit-Reset-Requests": "300ms", "X-Ratelimit-Reset-Tokens": "1s"}), false, 200, 2, time.Second},
		{"anthropic reset time", limited(map[string]string{"Anthropic-Ratelimit-Requests-Reset": "+2s"}), false, 200, 2, 500 * time.Millisecond},
		{"no stated reset", limited(nil), false, 429, 1, 0},
		{"reset past the bound", limited(map[string]string{"Retry-After": "120"}), false, 429, 1, 0},
		{"unparsable reset", limited(map[string]string{"Retry-After": "soon", "X-Ratelimit-Reset-Requests": "6 minutes"}), false, 429, 1, 0},
		{"attempts bound", limited(map[string]string{"Retry-After": "0"}), true, 429, egress.DefaultRetryAttempts, 0},
		{"other failure", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(500)
			io.WriteString(w, "boom")
		}, false, 500, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newModelStack(t, nil, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 0 || tc.always {
					tc.first(w)
					return
				}
				ok(w)
			})
			start := time.Now()
			code, _, body := s.ask(t, s.openai+"/responses", `{"model":"gpt-5"}`)
			took := time.Since(start)
			if code != tc.wantCode || s.prov.count() != tc.wantReqs {
				t.Fatalf("box got %d %q after %d provider requests; want %d after %d", code, body, s.prov.count(), tc.wantCode, tc.wantReqs)
			}
			if took < tc.minWait {
				t.Fatalf("answered after %v; the stated reset asks for at least %v", took, tc.minWait)
			}
			if code == 429 && !strings.Contains(body, "slow down") {
				t.Fatalf("the provider's 429 was not passed back as is: %q", body)
			}
			if code == 200 && took > 10*time.Second {
				t.Fatalf("waited %v", took)
			}
		})
	}
}

// responsesStream is a Responses API answer streamed as server-sent
// events, its usage in the final event.
func responsesStream(w http.ResponseWriter, in, out int) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\n")
	w.(http.Flusher).Flush()
	fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"usage\":{\"input_tokens\":%d,\"output_tokens\":%d,\"total_tokens\":%d}}}\n\n", in, out, in+out)
}

// TestModelTokenBudget: the run's budget is charged with each answer's
// input and output tokens, a streamed Responses API answer included; once
// spent, the next request is refused before it reaches the provider, with
// a JSON error in the provider's own shape and an audit record.
func TestModelTokenBudget(t *testing.T) {
	b := &egress.TokenBudget{Limit: 100, Used: new(atomic.Int64)}
	s := newModelStack(t, b, func(n int, w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/messages") {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":20,\"cache_read_input_tokens\":5}}}\n\n")
			io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n")
			return
		}
		responsesStream(w, 30, 40)
	})
	code, _, body := s.ask(t, s.openai+"/responses", `{"model":"gpt-5","stream":true}`)
	if code != 200 || !strings.Contains(body, "response.completed") {
		t.Fatalf("first request: %d %q", code, body)
	}
	// The answer is charged once it has been relayed whole.
	waitUsed := func(n int64) {
		for i := 0; i < 200 && b.Used.Load() != n; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitUsed(70)
	if b.Used.Load() != 70 {
		t.Fatalf("budget charged %d after a 30+40 answer, want 70", b.Used.Load())
	}
	code, _, _ = s.ask(t, s.anthro+"/v1/messages", `{"model":"claude-x","stream":true}`)
	waitUsed(110)
	if code != 200 || b.Used.Load() != 110 {
		t.Fatalf("second request: %d, budget used %d, want 110", code, b.Used.Load())
	}
	// Spent: both providers' shapes, nothing reaches the provider.
	code, _, body = s.ask(t, s.openai+"/responses", `{"model":"gpt-5","stream":true}`)
	var oe struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal([]byte(body), &oe); err != nil || code != 429 || oe.Error.Code != "insufficient_quota" ||
		!strings.Contains(oe.Error.Message, "limits.model_tokens") {
		t.Fatalf("spent budget, openai shape: %d %q", code, body)
	}
	code, _, body = s.ask(t, s.anthro+"/v1/messages", `{"model":"claude-x"}`)
	var ae struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(body), &ae); err != nil || code != 403 || ae.Type != "error" || ae.Error.Type != "permission_error" ||
		!strings.Contains(ae.Error.Message, "limits.model_tokens") {
		t.Fatalf("spent budget, anthropic shape: %d %q", code, body)
	}
	if n := s.prov.count(); n != 2 {
		t.Fatalf("the provider saw %d requests, want 2 (the refused ones never reach it)", n)
	}
	refused := 0
	for _, e := range s.audited() {
		if e.Proto == "model" && !e.Allow && strings.Contains(e.Reason, "limits.model_tokens") {
			refused++
		}
		if js, _ := json.Marshal(e); strings.Contains(string(js), s.realKey) {
			t.Fatalf("an audit record holds the key: %s", js)
		}
	}
	if refused != 2 {
		t.Fatalf("%d audit records of a spent budget, want 2", refused)
	}
}
