package egress_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
)

// TestModelProxy: a box client asks the model proxy for an allowed model
// with a stand-in key; the provider receives the real key, the answer
// streams through event by event, and its usage is recorded. A model
// outside models.allow is refused before anything reaches the provider.
func TestModelProxy(t *testing.T) {
	leakCheck(t)
	root := newTestRoot(t)
	const key = "sk-ant-api03-RealProviderKey0123456789abcdef"
	var mu sync.Mutex
	var got []string
	release := make(chan struct{})
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{root.leaf(t, "api.anthropic.test")}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s key=%s body=%s", r.Method, r.URL.Path, r.Header.Get("X-Api-Key"), b))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12}}}\n\n")
		w.(http.Flusher).Flush()
		<-release // the first event must reach the box before the rest is sent
		fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":34}}\n\n")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	upPort := int(netip.MustParseAddrPort(ln.Addr().String()).Port())

	o := policyOpts(t, nil, nil)
	o.Resolver = newResolver(map[string][]string{"api.anthropic.test": {"127.0.0.1"}})
	o.AllowAddr = func(a netip.Addr, p int) (bool, string) { return a.IsLoopback() && p == upPort, "test" }
	o.UpstreamRoots = root.pool
	o.Models = &egress.Models{
		Allow:     func(m string) bool { ok, _ := path.Match("claude-*", m); return ok },
		Providers: map[string]egress.Provider{"anthropic": {Host: "api.anthropic.test", Port: upPort, Key: key, Header: "X-Api-Key"}},
	}
	s := newStack(t, o)
	var base string
	for _, kv := range s.env {
		if v, ok := strings.CutPrefix(kv, "ANTHROPIC_BASE_URL="); ok {
			base = v
		}
	}
	if base == "" {
		t.Fatalf("the forwarder set no ANTHROPIC_BASE_URL: %v", s.env)
	}
	pu, _ := url.Parse("http://" + s.httpAddr)
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}

	// A refused model: nothing reaches the provider.
	resp, err := c.Post(base+"/v1/messages", "application/json", strings.NewReader(`{"model":"gpt-4o","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "models.allow") {
		t.Fatalf("refused model: %d %q", resp.StatusCode, b)
	}

	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4","stream":true}`))
	req.Header.Set("X-Api-Key", "airlock-model-proxy")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, "message_start") {
		close(release)
		t.Fatalf("first event: %q %v", first, err)
	}
	close(release) // the first event arrived while the provider was still holding the rest
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if !strings.Contains(string(rest), "output_tokens") || strings.Contains(first+string(rest), key) {
		t.Fatalf("rest of the stream: %q", rest)
	}
	mu.Lock()
	seen := strings.Join(got, "\n")
	mu.Unlock()
	if strings.Count(seen, "\n") != 0 || !strings.Contains(seen, "POST /v1/messages key="+key) {
		t.Fatalf("provider saw %q, want one request with the real key", seen)
	}
	var usage map[string]int64
	// The record is written once the answer has been relayed.
	for i := 0; i < 200 && usage == nil; i++ {
		for _, e := range s.audited() {
			if e.Proto == "model" && e.Allow {
				usage = e.Usage
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, e := range s.audited() {
		if e.Proto == "model" && e.Allow {
			if e.Model != "claude-sonnet-4" {
				t.Errorf("model recorded as %q", e.Model)
			}
		}
		if js, _ := json.Marshal(e); strings.Contains(string(js), key) {
			t.Fatalf("an audit record holds the key: %s", js)
		}
	}
	if usage["input_tokens"] != 12 || usage["output_tokens"] != 34 {
		t.Fatalf("usage recorded as %v", usage)
	}
}

// TestNoModelEnvWithoutModels: a box whose proxy serves no model proxy gets
// no model variables.
func TestNoModelEnvWithoutModels(t *testing.T) {
	s := newStack(t, policyOpts(t, nil, nil))
	for _, kv := range s.env {
		if strings.HasPrefix(kv, "ANTHROPIC_BASE_URL=") || strings.HasPrefix(kv, "OPENAI_BASE_URL=") {
			t.Fatalf("model variable %s without a model proxy", kv)
		}
	}
}
