package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
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
	if _, err := cleanPath(upPath); err != nil {
		return refuse(http.StatusBadRequest, err.Error())
	}
	var body []byte
	if h.chunked || h.contentLength > 0 {
		if h.contentLength > maxModelBody {
			return refuse(http.StatusRequestEntityTooLarge, "the request is larger than the model proxy's 16 MiB")
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
			return refuse(http.StatusBadRequest, "the request body could not be read whole (at most 16 MiB)")
		}
		if h.chunked {
			if err := discardTrailer(br, p.o.MaxHeaderBytes); err != nil {
				return refuse(http.StatusBadRequest, "malformed chunked trailer")
			}
		}
		body = b
	}
	if h.method != http.MethodGet && h.method != http.MethodHead {
		var req struct {
			Model *string `json:"model"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Model == nil {
			return refuse(http.StatusBadRequest, "a model request is a JSON object naming its model")
		}
		ev.Model = truncate(*req.Model, 128)
		if p.o.Models.Allow == nil || !p.o.Models.Allow(*req.Model) {
			return refuse(http.StatusForbidden, "the model "+strconv.Quote(ev.Model)+" is not in this policy's models.allow")
		}
	}
	d := decision{host: prov.Host, port: prov.Port, rule: "models"}
	p.dial(p.ctx, &d)
	if d.outcome != allowed {
		ev.Error = d.reason
		return refuse(http.StatusBadGateway, "the provider "+name+" cannot be reached")
	}
	defer p.untrack(d.up)
	ev.Addr, ev.Allow = d.addr, true
	up := tls.Client(d.up, &tls.Config{ServerName: prov.Host, RootCAs: p.o.UpstreamRoots,
		MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
	hctx, cancel := context.WithTimeout(p.ctx, p.o.DialTimeout)
	err := up.HandshakeContext(hctx)
	cancel()
	if err != nil {
		ev.Allow, ev.Error = false, err.Error()
		return refuse(http.StatusBadGateway, "TLS to the provider failed verification or did not complete")
	}
	hdr := h.header.Clone()
	stripHop(hdr)
	for _, k := range []string{"Expect", "Content-Length", "Host", "Authorization", "X-Api-Key", "Cookie"} {
		hdr.Del(k)
	}
	hdr.Set(prov.Header, prov.Prefix+prov.Key)
	hdr.Set("Accept-Encoding", "identity")
	authority := prov.Host
	if prov.Port != 443 {
		authority = net.JoinHostPort(prov.Host, strconv.Itoa(prov.Port))
	}
	req := &http.Request{Method: h.method, URL: &url.URL{Scheme: "https", Host: authority, Opaque: upPath, RawQuery: u.RawQuery},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: hdr, Host: authority, Close: true}
	if body != nil {
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = nil
	}
	d.up.SetDeadline(time.Time{})
	if err := req.Write(up); err != nil {
		ev.Error = err.Error()
		p.audit(ev)
		writeStatus(w, http.StatusBadGateway, "airlock model proxy: the request to "+name+" failed")
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		ev.Error = err.Error()
		p.audit(ev)
		writeStatus(w, http.StatusBadGateway, "airlock model proxy: "+name+" sent no valid response")
		return false
	}
	defer resp.Body.Close()
	stripHop(resp.Header)
	unbindHeader(resp.Header, []Secret{{Value: prov.Key, Placeholder: strings.Repeat("*", len(prov.Key))}})
	meter := &usageMeter{r: newUnbindReader(resp.Body, []Secret{{Value: prov.Key, Placeholder: strings.Repeat("*", len(prov.Key))}})}
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
	}
	ev.BytesUp, ev.BytesDown, ev.Duration = int64(len(body)), dw.n, p.o.Now().Sub(start)
	ev.Usage = meter.usage()
	ev.Reason = resp.Status
	if p.audit(ev) != nil {
		keep = false
	}
	return keep
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
}

func (m *usageMeter) Read(b []byte) (int, error) {
	n, err := m.r.Read(b)
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
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	for _, u := range []map[string]any{ev.Usage, ev.Message.Usage} {
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
	return m.got
}
