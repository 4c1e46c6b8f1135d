package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ModelPrefix is the path under which the box reaches the model proxy, on
// the forwarder's HTTP port: OPENAI_BASE_URL is
// http://127.0.0.1:PORT/airlock/models/openai/v1 and ANTHROPIC_BASE_URL
// http://127.0.0.1:PORT/airlock/models/anthropic (see forward.Env).
const ModelPrefix = "/airlock/models/"

// Models configures the model proxy: the box asks for a model over plain
// HTTP on loopback, and the proxy sends the request to the provider over
// verified TLS with the provider's key, which the box never holds.
type Models struct {
	// Allow decides a model name. nil allows none.
	Allow func(model string) bool
	// Providers by the name in the path ("openai", "anthropic").
	Providers map[string]Provider
	// Budget, when set, refuses requests once the run's tokens are spent.
	Budget *TokenBudget
	// RetryTotal and RetryAttempts bound waiting out 429s with a stated
	// reset; zero means DefaultRetryTotal and DefaultRetryAttempts.
	RetryTotal    time.Duration
	RetryAttempts int
}

// Provider is one model provider's endpoint and key.
type Provider struct {
	Host string
	Port int
	// Key is the provider's key, from a fixed variable of airlock's own
	// environment.
	Key string
	// Header is the header that carries the key; Prefix goes before it
	// ("Authorization", "Bearer "; "X-Api-Key", "").
	Header, Prefix string
	// Path goes before the box's path ("/v1/responses") upstream: the
	// path of a custom endpoint's base URL without its final "/v1".
	Path string
}

// maxModelBody bounds a model request, which is read whole to find its
// model.
const maxModelBody = 16 << 20

// isModelRequest reports whether an absolute-form request is for the model
// proxy: to a loopback literal (the box's own forwarder), under the prefix.
func isModelRequest(u *url.URL) bool {
	h := u.Hostname()
	return (h == "127.0.0.1" || h == "localhost") && strings.HasPrefix(u.EscapedPath(), ModelPrefix)
}

// serveModel answers one model request read from the box. It reports
// whether the box's connection may carry another request.
func (p *Proxy) serveModel(w io.Writer, br *bufio.Reader, h *head, u *url.URL) bool {
	start := p.o.Now()
	rest := strings.TrimPrefix(u.EscapedPath(), ModelPrefix)
	name, upPath, _ := strings.Cut(rest, "/")
	upPath = "/" + upPath
	ev := Event{Proto: "model", Host: name, Method: h.method, Path: truncate(upPath, 256), Start: start}
	refuse := func(code int, why string) bool {
		ev.Reason = why
		p.audit(ev)
		writeStatus(w, code, "blocked by airlock model proxy: "+why)
		return false
	}
	prov, ok := p.o.Models.Providers[name]
	if !ok || prov.Key == "" {
		return refuse(http.StatusForbidden, "no model provider "+strconv.Quote(truncate(name, 40))+" is configured for this box")
	}
	clean, err := cleanPath(upPath)
	if err != nil {
		return refuse(http.StatusBadRequest, err.Error())
	}
	if !modelEndpoint(name, h.method, clean) {
		return refuse(http.StatusForbidden, h.method+" "+truncate(clean, 80)+" is not a model endpoint the proxy serves (only inference: "+
			strings.Join(modelEndpoints[providerFormat(name)], ", ")+")")
	}
	body, why, code := readModelBody(w, br, h, p.o.MaxHeaderBytes)
	if why != "" {
		return refuse(code, why)
	}
	// A request the proxy reads carries no placeholder, here as anywhere.
	if _, _, l := bindSecrets(p.o.Secrets, "", false, upPath, u.RawQuery, h.header.Clone()); l != nil {
		return refuse(http.StatusForbidden, l.reason())
	}
	if _, err := io.Copy(io.Discard, newScanReader(bytes.NewReader(body), p.o.Secrets)); err != nil {
		return refuse(http.StatusForbidden, bodyWhy(err))
	}
	var outCap int64 = -1
	if h.method != http.MethodGet && h.method != http.MethodHead {
		model, cap, why := modelOf(body)
		outCap = cap
		if why != "" {
			return refuse(http.StatusBadRequest, "a model request must be one JSON object naming its model once, under \"model\": "+why)
		}
		ev.Model = truncate(model, 128)
		if p.o.Models.Allow == nil || !p.o.Models.Allow(model) {
			return refuse(http.StatusForbidden, "the model "+strconv.Quote(ev.Model)+" is not in this policy's models.allow")
		}
	}
	if b := p.o.Models.Budget; b != nil {
		release, spent := b.reserve(p.ctx, reservation(b, body, outCap))
		if spent {
			ev.Reason = "the run's model token budget (limits.model_tokens: " + strconv.FormatInt(b.Limit, 10) + ") is spent"
			p.audit(ev)
			writeProviderError(w, name, ev.Reason)
			return false
		}
		defer release() // after the answer is charged, below
	}
	hdr := h.header.Clone()
	stripHop(hdr)
	// The key's headers, and those naming whom it bills (an organization
	// or project the key also belongs to), are the operator's.
	for _, k := range []string{"Expect", "Content-Length", "Host", "Authorization", "X-Api-Key", "Cookie",
		"Openai-Organization", "Openai-Project"} {
		hdr.Del(k)
	}
	hdr.Set(prov.Header, prov.Prefix+prov.Key)
	hdr.Set("Accept-Encoding", "identity")
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = nil
	}
	authority := prov.Host
	if prov.Port != 443 {
		authority = net.JoinHostPort(prov.Host, strconv.Itoa(prov.Port))
	}
	mk := func() *http.Request {
		req := &http.Request{Method: h.method, URL: &url.URL{Scheme: "https", Host: authority, Opaque: prov.Path + upPath, RawQuery: u.RawQuery},
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: hdr, Host: authority, Close: true}
		if body != nil {
			req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		return req
	}
	redact := []Secret{{Value: prov.Key, Placeholder: strings.Repeat("*", len(prov.Key))}}
	waited := 0
	resp, fail := p.askProvider(prov, name, mk, &ev, &waited)
	if fail != "" {
		p.audit(ev)
		writeStatus(w, http.StatusBadGateway, "airlock model proxy: "+fail)
		return false
	}
	defer resp.Body.Close()
	stripHop(resp.Header)
	resp.Trailer = nil // not relayed, as on intercepted connections
	unbindHeader(resp.Header, redact)
	meter := &usageMeter{r: newUnbindReader(resp.Body, redact)}
	resp.Body = io.NopCloser(meter)
	framed := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 || h.method == http.MethodHead
	keep := framed && !h.close
	resp.Close = !keep
	if h.proto == "HTTP/1.0" && len(resp.TransferEncoding) > 0 {
		resp.TransferEncoding, resp.ContentLength, resp.Close, keep = nil, -1, true, false
	}
	// resp.Write copies the body as it arrives, chunk by chunk, straight to
	// the box's socket: a streamed answer streams.
	dw := &countWriter{w: w}
	if err := resp.Write(dw); err != nil {
		ev.Error, keep = err.Error(), false
		// The box hung up (or the stream broke): the provider bills the
		// whole answer, so its usage is still read to the end.
		drainUsage(meter, resp.Body)
	}
	ev.BytesUp, ev.BytesDown, ev.Duration = int64(len(body)), dw.n, p.o.Now().Sub(start)
	ev.Usage = meter.usage()
	if b := p.o.Models.Budget; b != nil {
		n := spentTokens(ev.Usage)
		if ev.Usage == nil && body != nil && resp.StatusCode/100 == 2 {
			// An answer to a model request whose usage is not seen (a
			// stream asked without it) is charged its bytes, more than
			// its tokens: the budget fails closed.
			n = ev.BytesUp + meter.n
		}
		b.Add(n)
	}
	ev.Reason = resp.Status
	if waited > 0 {
		ev.Reason += fmt.Sprintf(" (after waiting out %d rate-limit answers)", waited)
	}
	if p.audit(ev) != nil {
		keep = false
	}
	return keep
}

// readModelBody reads a model request's body whole: the model it names is
// decided before anything is sent, and a request waited out after a 429 is
// sent again. It returns a refusal's reason and status when it cannot.
func readModelBody(w io.Writer, br *bufio.Reader, h *head, maxHeader int) (body []byte, why string, code int) {
	if !h.chunked && h.contentLength <= 0 {
		return nil, "", 0
	}
	if h.contentLength > maxModelBody {
		return nil, "the request is larger than the model proxy's 16 MiB", http.StatusRequestEntityTooLarge
	}
	if strings.EqualFold(h.header.Get("Expect"), "100-continue") {
		io.WriteString(w, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	var r io.Reader = io.LimitReader(br, h.contentLength)
	if h.chunked {
		r = httputil.NewChunkedReader(br)
	}
	b, err := io.ReadAll(io.LimitReader(r, maxModelBody+1))
	if err != nil || len(b) > maxModelBody {
		return nil, "the request body could not be read whole (at most 16 MiB)", http.StatusBadRequest
	}
	if h.chunked {
		if err := discardTrailer(br, maxHeader); err != nil {
			return nil, "malformed chunked trailer", http.StatusBadRequest
		}
	}
	return b, "", 0
}

// askProvider sends the request mk makes to the provider and returns its
// answer's head. A 429 that states when the limit resets is waited out and
// the same request sent again, to the same provider and model, within
// Models' retry bounds; nothing has reached the box yet then. Any other
// answer, a 429 without a stated reset or with one past the bounds, is
// returned as it came. fail is set (and ev.Error) when no answer came.
func (p *Proxy) askProvider(prov Provider, name string, mk func() *http.Request, ev *Event, waited *int) (*http.Response, string) {
	total, attempts := p.o.Models.retryBounds()
	deadline := p.o.Now().Add(total)
	for try := 1; ; try++ {
		resp, fail := p.askOnce(prov, name, mk(), ev)
		if fail != "" || resp.StatusCode != http.StatusTooManyRequests || try >= attempts {
			return resp, fail
		}
		wait, ok := statedReset(resp.Header, p.o.Now())
		if !ok || p.o.Now().Add(wait).After(deadline) {
			return resp, ""
		}
		resp.Body.Close()
		*waited++
		t := time.NewTimer(wait)
		select {
		case <-p.ctx.Done():
			t.Stop()
			ev.Error = "the proxy closed while waiting out a rate limit"
			return nil, "the proxy closed while waiting out " + name + "'s rate limit"
		case <-t.C:
		}
	}
}

// askOnce opens a verified TLS connection to the provider and sends req on
// it.
func (p *Proxy) askOnce(prov Provider, name string, req *http.Request, ev *Event) (*http.Response, string) {
	d := decision{host: prov.Host, port: prov.Port, rule: "models"}
	p.dial(p.ctx, &d)
	if d.outcome != allowed {
		ev.Error = d.reason
		return nil, "the provider " + name + " cannot be reached"
	}
	ev.Addr, ev.Allow = d.addr, true
	up := tls.Client(d.up, &tls.Config{ServerName: prov.Host, RootCAs: p.o.UpstreamRoots,
		MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	hctx, cancel := context.WithTimeout(p.ctx, p.o.DialTimeout)
	err := up.HandshakeContext(hctx)
	cancel()
	if err != nil {
		p.untrack(d.up)
		ev.Allow, ev.Error = false, err.Error()
		return nil, "TLS to the provider " + name + " failed verification or did not complete"
	}
	d.up.SetDeadline(time.Time{})
	if err := req.Write(up); err != nil {
		p.untrack(d.up)
		ev.Error = err.Error()
		return nil, "the request to " + name + " failed"
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		p.untrack(d.up)
		ev.Error = err.Error()
		return nil, name + " sent no valid response"
	}
	resp.Body = &closeBoth{ReadCloser: resp.Body, close: func() { p.untrack(d.up) }}
	return resp, ""
}

// closeBoth closes an answer's body and then its connection.
type closeBoth struct {
	io.ReadCloser
	close func()
}

func (c *closeBoth) Close() error {
	err := c.ReadCloser.Close()
	c.close()
	return err
}

// DefaultRetryTotal and DefaultRetryAttempts bound how long and how often
// a rate-limited model request is waited out.
const (
	DefaultRetryTotal    = 30 * time.Second
	DefaultRetryAttempts = 3
)

func (m *Models) retryBounds() (time.Duration, int) {
	total, n := m.RetryTotal, m.RetryAttempts
	if total <= 0 {
		total = DefaultRetryTotal
	}
	if n <= 0 {
		n = DefaultRetryAttempts
	}
	return total, n
}

// statedReset reads when a 429's limit resets: Retry-After (seconds or an
// HTTP date) or OpenAI's retry-after-ms when given; otherwise the latest of
// OpenAI's x-ratelimit-reset-requests/-tokens (durations such as "6m0s")
// and Anthropic's anthropic-ratelimit-*-reset (RFC 3339 times). ok is false
// when none is given or none parses.
func statedReset(h http.Header, now time.Time) (wait time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseUint(v, 10, 32); err == nil {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	for name, vs := range h {
		low := strings.ToLower(name)
		if len(vs) != 1 {
			continue
		}
		v := strings.TrimSpace(vs[0])
		switch {
		case low == "x-ratelimit-reset-requests" || low == "x-ratelimit-reset-tokens":
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				wait, ok = max(wait, d), true
			}
		case strings.HasPrefix(low, "anthropic-ratelimit-") && strings.HasSuffix(low, "-reset"):
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				wait, ok = max(wait, t.Sub(now)), true
			}
		}
	}
	return wait, ok
}

// TokenBudget is a run's model token budget (limits.model_tokens). Used
// is shared by every box of the run (each box's Limit is its policy's,
// which a narrowed call may lower). A request is refused once Used reaches
// Limit; the answer that crosses it is relayed whole.
//
// Held, shared like Used, keeps concurrent requests from spending the
// same unspent budget: each request in flight holds a reservation (its
// declared output cap and an estimate of its input, or the whole budget
// when it declares no cap), and a request whose reservation does not fit
// beside the others waits until they end. nil holds none: requests in
// flight may then cross the budget further.
type TokenBudget struct {
	Limit int64
	Used  *atomic.Int64
	Held  *Reservations
}

// Reservations are the tokens the model requests in flight may spend.
type Reservations struct {
	mu   sync.Mutex
	held int64
	wake chan struct{} // closed when a reservation is released
}

// reservation is what a request holds while in flight: its declared
// output cap and its input (about 4 bytes a token), or the whole budget.
func reservation(b *TokenBudget, body []byte, outCap int64) int64 {
	if outCap < 0 {
		return b.Limit
	}
	return outCap + int64(len(body))/4
}

// reserve waits until want fits beside the reservations held (a request
// alone is always admitted, as before), then holds it. spent is true when
// the budget is used up or ctx ended; release is called once the answer
// has been charged.
func (b *TokenBudget) reserve(ctx context.Context, want int64) (release func(), spent bool) {
	r := b.Held
	if r == nil {
		return func() {}, b.Spent()
	}
	for {
		r.mu.Lock()
		if b.Spent() {
			r.mu.Unlock()
			return nil, true
		}
		if r.held == 0 || b.Used.Load()+r.held+want <= b.Limit {
			r.held += want
			r.mu.Unlock()
			return func() {
				r.mu.Lock()
				r.held -= want
				if r.wake != nil {
					close(r.wake)
					r.wake = nil
				}
				r.mu.Unlock()
			}, false
		}
		if r.wake == nil {
			r.wake = make(chan struct{})
		}
		wake := r.wake
		r.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, true
		}
	}
}

// Spent reports whether the budget is used up.
func (b *TokenBudget) Spent() bool { return b.Used.Load() >= b.Limit }

// Add charges n tokens.
func (b *TokenBudget) Add(n int64) { b.Used.Add(n) }

// spentTokens is the input and output an answer's usage reports, in
// either wire format (OpenAI's prompt/completion or input/output tokens;
// Anthropic's input, output and cache tokens).
func spentTokens(u map[string]int64) int64 {
	var n int64
	for _, k := range []string{"input_tokens", "output_tokens", "prompt_tokens", "completion_tokens",
		"cache_creation_input_tokens", "cache_read_input_tokens"} {
		n += u[k]
	}
	return n
}

// writeProviderError answers the box with a JSON error in the provider's
// own shape, so the agent's client reports the reason as the provider's
// error: Anthropic's permission_error, OpenAI's insufficient_quota (which
// clients treat as final rather than retrying).
func writeProviderError(w io.Writer, provider, why string) {
	code, v := http.StatusTooManyRequests, any(map[string]any{"error": map[string]any{
		"message": "airlock: " + why, "type": "insufficient_quota", "code": "insufficient_quota", "param": nil}})
	if provider == "anthropic" {
		code, v = http.StatusForbidden, map[string]any{"type": "error", "error": map[string]any{
			"type": "permission_error", "message": "airlock: " + why}}
	}
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(b), b)
}

// usageMeter reads token counts from an answer as it passes: the "usage"
// object of a JSON body, or of the events of a streamed (server-sent
// events) one. Counts are kept per field, the largest seen, so Anthropic's
// start and delta events and OpenAI's final chunk all count once.
type usageMeter struct {
	r    io.Reader
	line []byte
	all  []byte // a non-streamed body, up to 1 MiB
	got  map[string]int64
	n    int64  // bytes read
	tail []byte // the last 64 KiB, where a long JSON answer's usage is
}

const meterTail = 64 << 10

func (m *usageMeter) Read(b []byte) (int, error) {
	n, err := m.r.Read(b)
	m.n += int64(n)
	for _, c := range b[:n] {
		if c == '\n' {
			m.take(m.line)
			m.line = m.line[:0]
			continue
		}
		if len(m.line) < 1<<20 {
			m.line = append(m.line, c)
		}
	}
	if len(m.all) < 1<<20 {
		m.all = append(m.all, b[:n]...)
	}
	m.tail = append(m.tail, b[:n]...)
	if len(m.tail) > 2*meterTail {
		m.tail = append(m.tail[:0], m.tail[len(m.tail)-meterTail:]...)
	}
	return n, err
}

func (m *usageMeter) take(line []byte) {
	line = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data:")))
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var ev struct {
		Usage   map[string]any `json:"usage"`
		Message struct {
			Usage map[string]any `json:"usage"`
		} `json:"message"`
		Response struct {
			Usage map[string]any `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	for _, u := range []map[string]any{ev.Usage, ev.Message.Usage, ev.Response.Usage} {
		for k, v := range u {
			if f, ok := v.(float64); ok && f >= 0 {
				if m.got == nil {
					m.got = map[string]int64{}
				}
				m.got[k] = max(m.got[k], int64(f))
			}
		}
	}
}

func (m *usageMeter) usage() map[string]int64 {
	if m.got == nil {
		m.take(m.all)
		m.take(m.line)
	}
	if m.got == nil {
		m.takeTail()
	}
	return m.got
}

// takeTail reads the last "usage" object of an answer too long to be
// kept whole (a large embeddings answer): providers put it at the end, and
// a key in quotes cannot come from inside a JSON string, where quotes are
// escaped.
func (m *usageMeter) takeTail() {
	i := bytes.LastIndex(m.tail, []byte(`"usage"`))
	if i < 0 {
		return
	}
	rest := bytes.TrimLeft(m.tail[i+len(`"usage"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return
	}
	var obj json.RawMessage
	if json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&obj) != nil {
		return
	}
	m.take(append([]byte(`{"usage":`), append(obj, '}')...))
}

// maxDrain bounds reading an answer the box stopped reading, for its usage.
const (
	maxDrainBytes = 64 << 20
	maxDrainTime  = 5 * time.Minute
)

// drainUsage reads the rest of an answer through its meter, within
// maxDrainBytes and maxDrainTime (then the connection is closed).
func drainUsage(meter *usageMeter, body io.Closer) {
	t := time.AfterFunc(maxDrainTime, func() { body.Close() })
	defer t.Stop()
	io.Copy(io.Discard, io.LimitReader(meter, maxDrainBytes))
}

// modelOf reads the model a request body names: the body must be one JSON
// object with exactly one top-level key spelled "model", holding a string.
// Any other spelling of the key (another case, as Go's decoder would
// match; a duplicate, which parsers resolve differently) is refused, so
// the model decided is the model every reader of the body sees.
//
// outCap is the largest output cap the body declares (max_tokens,
// max_output_tokens, max_completion_tokens), -1 for none; each of those
// keys, too, may be given only once.
func modelOf(body []byte) (model string, outCap int64, why string) {
	outCap = -1
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", -1, "the body is not a JSON object"
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", -1, "the body is not valid JSON"
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", -1, "the body is not valid JSON"
		}
		switch {
		case strings.EqualFold(key, "background"):
			// Answered at once without usage while the provider goes on
			// generating and billing out of the proxy's sight.
			if string(v) != "false" && string(v) != "null" {
				return "", -1, "a background request runs out of the proxy's sight (its usage and budget); send it in the foreground"
			}
		case strings.EqualFold(key, "tools"):
			if key != "tools" {
				return "", -1, "the key \"tools\" is given in another spelling"
			}
			if why := clientTools(v); why != "" {
				return "", -1, why
			}
		case strings.EqualFold(key, "mcp_servers") || strings.EqualFold(key, "web_search_options"):
			// The provider would reach hosts the box names.
			return "", -1, "the provider-side " + strconv.Quote(key) + " reaches the network outside the box's policy"
		case key == "max_tokens" || key == "max_output_tokens" || key == "max_completion_tokens":
			if seen[key] {
				return "", -1, "the key " + strconv.Quote(key) + " is given more than once"
			}
			seen[key] = true
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 {
				outCap = max(outCap, n)
			}
		case strings.EqualFold(key, "model"):
			if key != "model" || seen["model"] {
				return "", -1, "the key \"model\" is given more than once or in another spelling"
			}
			if err := json.Unmarshal(v, &model); err != nil {
				return "", -1, "the model is not a string"
			}
			seen["model"] = true
		}
	}
	if _, err := dec.Token(); err != nil {
		return "", -1, "the body is not valid JSON"
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", -1, "the body holds more than one JSON value"
	}
	if !seen["model"] {
		return "", -1, "no \"model\""
	}
	return model, outCap, ""
}

// modelEndpoints are the paths the model proxy serves, per wire format:
// inference only, whose model is the body's top-level "model" and whose
// usage comes back in the answer, and the model list. Everything else the
// key opens (batches, files, fine-tuning, stored responses, admin) would
// spend or read outside models.allow and limits.model_tokens.
var modelEndpoints = map[string][]string{
	"openai": {"POST /v1/responses", "POST /v1/responses/compact", "POST /v1/responses/input_tokens",
		"POST /v1/chat/completions", "POST /v1/completions", "POST /v1/embeddings", "GET /v1/models", "GET /v1/models/*"},
	"anthropic": {"POST /v1/messages", "POST /v1/messages/count_tokens", "GET /v1/models", "GET /v1/models/*"},
}

// providerFormat is the wire format a provider name speaks: the custom
// endpoint stands in for "openai".
func providerFormat(name string) string {
	if name == "anthropic" {
		return name
	}
	return "openai"
}

// modelEndpoint reports whether method and the clean path are served.
func modelEndpoint(name, method, clean string) bool {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	for _, e := range modelEndpoints[providerFormat(name)] {
		m, glob, _ := strings.Cut(e, " ")
		if m == method && len(clean) > 1 && matchPath(glob, strings.TrimSuffix(clean, "/")) {
			return true
		}
	}
	return false
}

// clientTools refuses a tools list naming a tool the provider runs itself
// (a remote MCP server, web search or fetch, code execution, file search):
// the provider would reach hosts, or read stores, the box's policy never
// decided, and spend outside the usage it reports. Tools the client runs
// are allowed: functions and custom tools (both wire formats, untyped in
// Anthropic's), and the client-run typed tools (OpenAI's local_shell,
// Anthropic's bash, text editor and computer use). Each tool object's
// keys are read exactly: a "type" given twice or in another case is
// refused.
func clientTools(raw json.RawMessage) string {
	var tools []json.RawMessage
	if json.Unmarshal(raw, &tools) != nil {
		return "\"tools\" is not a list"
	}
	for _, tl := range tools {
		typ, why := exactString(tl, "type")
		if why != "" {
			return "a tool " + why
		}
		switch {
		case typ == "" || typ == "function" || typ == "custom" || typ == "local_shell",
			strings.HasPrefix(typ, "bash_") || strings.HasPrefix(typ, "text_editor_") || strings.HasPrefix(typ, "computer_"):
		case typ == "namespace":
			// A group of the client's tools: its members are checked.
			if inner, why := exactRaw(tl, "tools"); why != "" {
				return "a tool namespace " + why
			} else if inner != nil {
				if why := clientTools(inner); why != "" {
					return why
				}
			}
		default:
			return "the tool type " + strconv.Quote(truncate(typ, 40)) + " runs at the provider, outside the box's policy; give the box's own tools as functions"
		}
	}
	return ""
}

// exactString reads the string under key in a JSON object, "" when
// absent; a key given twice or in another case is refused.
func exactString(raw json.RawMessage, key string) (string, string) {
	v, why := exactRaw(raw, key)
	if why != "" {
		return "", why
	}
	var val string
	if v != nil && json.Unmarshal(v, &val) != nil {
		return "", "gives " + strconv.Quote(key) + " not as a string"
	}
	return val, ""
}

// exactRaw reads the value under key in a JSON object, nil when absent;
// a key given twice or in another case is refused.
func exactRaw(raw json.RawMessage, key string) (json.RawMessage, string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "is not a JSON object"
	}
	var val json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, "is not valid JSON"
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "is not valid JSON"
		}
		if !strings.EqualFold(k, key) {
			continue
		}
		if k != key || val != nil {
			return nil, "gives " + strconv.Quote(key) + " more than once or in another case"
		}
		val = v
	}
	return val, ""
}
