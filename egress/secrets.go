package egress

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Secret is a credential the proxy holds for the box. The box holds only
// Placeholder (see Phantom); the proxy writes Value in its place in
// requests to Hosts, in the one place the binding names, over intercepted
// TLS only. A placeholder the proxy sees anywhere else refuses the request.
type Secret struct {
	// Name is the variable's name; audit records show only this.
	Name string
	// Value is the real credential; it never leaves the proxy except
	// toward Hosts.
	Value string
	// Placeholder is what the box holds instead (Phantom).
	Placeholder string
	// Hosts are the canonical host names the secret is bound to.
	Hosts []string
	// Header names the header the placeholder is replaced in
	// ("Authorization" for "Authorization: Bearer {}"); "" for none.
	Header string
	// Basic replaces the placeholder inside an "Authorization: Basic"
	// header's decoded user:password.
	Basic bool
	// Query names the URL query parameter the placeholder is replaced in;
	// "" for none.
	Query string
	// SigV4KeyID, on an AWS secret access key, names the secret holding its
	// access key ID: requests to Hosts signed (AWS Signature Version 4)
	// with both placeholders are signed again with the real pair.
	SigV4KeyID string
}

// MaxBodyScan is how much of a request body is read and searched for a
// placeholder before any of it is sent upstream. The rest of a longer body
// is searched as it streams; a placeholder found there ends the request
// mid-body (the upstream connection is closed, so the request never
// completes) and the box gets a 403.
const MaxBodyScan = 1 << 20

// minRandom is the fewest characters a placeholder must randomize: fewer
// would let a guess or a chance match in ordinary traffic collide with it.
const minRandom = 16

// Phantom returns a random placeholder of the same shape as value: the same
// length, a leading lowercase prefix such as "ghp_" or "sk-ant-" kept,
// every letter and digit after it replaced by a random one of its class,
// every other byte kept. A value with fewer than 16 such characters cannot
// be phantom: a placeholder that short could be guessed or met by chance.
func Phantom(value string) (string, error) {
	pre := prefixLen(value)
	b := []byte(value)
	n := 0
	for i := pre; i < len(b); i++ {
		var set string
		switch c := b[i]; {
		case c >= 'a' && c <= 'z':
			set = "abcdefghijklmnopqrstuvwxyz"
		case c >= 'A' && c <= 'Z':
			set = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		case c >= '0' && c <= '9':
			set = "0123456789"
		default:
			continue
		}
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
		if err != nil {
			return "", fmt.Errorf("egress: placeholder: %w", err)
		}
		b[i] = set[k.Int64()]
		n++
	}
	if n < minRandom {
		return "", fmt.Errorf("the value has %d letters and digits after its prefix; a placeholder needs at least %d", n, minRandom)
	}
	if string(b) == value {
		return Phantom(value) // vanishingly rare; try again
	}
	return string(b), nil
}

// prefixLen is the length of a leading run of lowercase words each ended
// by '_' or '-' ("ghp_", "github_pat_", "sk-ant-", "xoxb-"): the part of a
// token that says what kind it is, which programs check.
func prefixLen(v string) int {
	end, i := 0, 0
	for i < len(v) && i < 16 {
		j := i
		for j < len(v) && v[j] >= 'a' && v[j] <= 'z' {
			j++
		}
		if j == i || j >= len(v) || (v[j] != '_' && v[j] != '-') {
			break
		}
		i = j + 1
		end = i
	}
	return end
}

// boundTo reports whether s may be written toward host.
func (s *Secret) boundTo(host string) bool { return slices.Contains(s.Hosts, host) }

// leak is a placeholder found where it may not be.
type leak struct {
	s     *Secret
	where string
}

func (l *leak) reason() string {
	return "the request carries the placeholder of " + l.s.Name + " in " + l.where +
		"; it is only sent, in its binding's place, to " + strings.Join(l.s.Hosts, ", ")
}

// bindSecrets checks a request head for placeholders and, on a connection
// where bound is true (intercepted TLS), writes the real values of the
// secrets bound to host in their places. It returns the names of the
// secrets written, or the first placeholder found anywhere else. hdr is
// changed in place; the new raw query is returned.
func bindSecrets(secrets []Secret, host string, bound bool, target, rawQuery string, hdr http.Header) (query string, used []string, l *leak) {
	query = rawQuery
	for i := range secrets {
		s := &secrets[i]
		mine := bound && s.boundTo(host)
		ph := s.Placeholder
		// The path: never a place for a credential.
		pathPart, _, _ := strings.Cut(target, "?")
		if containsPH(pathPart, ph) {
			return "", nil, &leak{s, "the URL path"}
		}
		if containsPH(query, ph) {
			if !mine || s.Query == "" {
				return "", nil, &leak{s, "the URL query"}
			}
			q, ok := replaceQuery(query, s.Query, ph, s.Value)
			if !ok {
				return "", nil, &leak{s, "the URL query outside parameter " + s.Query}
			}
			query = q
			used = append(used, s.Name)
		}
		for name, vs := range hdr {
			if containsPH(name, ph) {
				return "", nil, &leak{s, "a header name"}
			}
			for j, v := range vs {
				switch {
				case mine && s.Header != "" && name == http.CanonicalHeaderKey(s.Header) && strings.Contains(v, ph):
					vs[j] = strings.ReplaceAll(v, ph, s.Value)
					used = append(used, s.Name)
				case name == "Authorization" && isBasic(v):
					nv, hit, ok := replaceBasic(v, ph, s.Value)
					if hit && !(mine && s.Basic) {
						return "", nil, &leak{s, "the " + name + " header"}
					}
					if !ok {
						return "", nil, &leak{s, "the " + name + " header"}
					}
					if hit {
						vs[j] = nv
						used = append(used, s.Name)
					}
				case containsPH(v, ph):
					return "", nil, &leak{s, "the " + name + " header"}
				}
			}
		}
	}
	return query, used, nil
}

// containsPH finds ph in s, also percent-encoded byte by byte in part
// (a placeholder's characters need no encoding, so any encoding of them is
// an attempt to hide it).
func containsPH(s, ph string) bool {
	if strings.Contains(s, ph) {
		return true
	}
	if !strings.Contains(s, "%") {
		return false
	}
	return strings.Contains(percentDecode(s), ph)
}

// percentDecode decodes every valid %XX and keeps everything else.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// replaceQuery writes value for ph in the parameter named param, and
// reports false when ph is anywhere else in the query.
func replaceQuery(raw, param, ph, value string) (string, bool) {
	parts := strings.Split(raw, "&")
	for i, kv := range parts {
		k, v, _ := strings.Cut(kv, "=")
		if !containsPH(kv, ph) {
			continue
		}
		if percentDecode(k) != param || !strings.Contains(v, ph) || containsPH(k, ph) {
			return "", false
		}
		v = strings.ReplaceAll(v, ph, value)
		if containsPH(v, ph) {
			return "", false
		}
		parts[i] = k + "=" + escapeQueryValue(v)
	}
	return strings.Join(parts, "&"), true
}

// escapeQueryValue escapes what a secret value may hold that a query value
// may not carry as is; unreserved bytes and the rest of v are kept.
func escapeQueryValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= 0x20 || c >= 0x7f || strings.IndexByte("&#+=%", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isBasic(v string) bool {
	scheme, _, _ := strings.Cut(v, " ")
	return strings.EqualFold(scheme, "Basic")
}

// replaceBasic decodes a Basic credential and, if it holds ph, writes
// value in its place. ok is false when the credential does not decode
// strictly (a client that sends one is refused when any placeholder could
// be inside; see bindSecrets).
func replaceBasic(v, ph, value string) (nv string, hit, ok bool) {
	scheme, cred, _ := strings.Cut(v, " ")
	raw, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", false, false
	}
	if !bytes.Contains(raw, []byte(ph)) {
		return v, false, true
	}
	out := bytes.ReplaceAll(raw, []byte(ph), []byte(value))
	return scheme + " " + base64.StdEncoding.EncodeToString(out), true, true
}

// errPlaceholderInBody is the error a scanning reader returns.
type errPlaceholderInBody struct{ l leak }

func (e *errPlaceholderInBody) Error() string { return e.l.reason() }

// scanReader passes r through and fails, before returning the bytes that
// complete it, when any placeholder appears in the stream.
type scanReader struct {
	r     io.Reader
	phs   []*Secret
	tail  []byte // the last bytes seen, to catch a placeholder split across reads
	keep  int
	found *errPlaceholderInBody
}

func newScanReader(r io.Reader, secrets []Secret) *scanReader {
	sr := &scanReader{r: r}
	for i := range secrets {
		sr.phs = append(sr.phs, &secrets[i])
		sr.keep = max(sr.keep, 3*len(secrets[i].Placeholder)-1) // escaped, it is up to 3 times as long
	}
	return sr
}

func (s *scanReader) Read(b []byte) (int, error) {
	if s.found != nil {
		return 0, s.found
	}
	n, err := s.r.Read(b)
	if n > 0 {
		win := append(s.tail, b[:n]...)
		// Percent-escapes (a form body) are undone by the server: the
		// placeholder is searched for decoded too.
		var dec []byte
		if bytes.IndexByte(win, '%') >= 0 {
			dec = []byte(percentDecode(string(win)))
		}
		for _, sec := range s.phs {
			if bytes.Contains(win, []byte(sec.Placeholder)) || bytes.Contains(dec, []byte(sec.Placeholder)) {
				s.found = &errPlaceholderInBody{leak{sec, "the request body"}}
				return 0, s.found
			}
		}
		if len(win) > s.keep {
			win = win[len(win)-s.keep:]
		}
		s.tail = bytes.Clone(win)
	}
	return n, err
}

// maxDecodedScan bounds the decoded size of an encoded request body the
// proxy searches; a larger one (a decompression bomb) is refused.
const maxDecodedScan = 64 << 20

// encodedRefusal is why an encoded body is refused unread.
type encodedRefusal string

func (e encodedRefusal) Error() string { return string(e) }

// scanEncoded reads a request body sent with Content-Encoding codings (at
// most MaxBodyScan of it, encoded), undoes the codings it knows (gzip,
// deflate) in reverse order of their listing and searches the result for
// placeholders. A body it cannot read — another coding, too large encoded
// or decoded, malformed — is refused: a server would read what the proxy
// could not. It returns the body as sent.
func scanEncoded(r io.Reader, codings []string, secrets []Secret) (io.Reader, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxBodyScan+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxBodyScan {
		return nil, encodedRefusal("an encoded request body (Content-Encoding) over 1 MiB cannot be searched for placeholders; send it unencoded")
	}
	var list []string
	for _, v := range codings {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				list = append(list, c)
			}
		}
	}
	var dec io.Reader = bytes.NewReader(raw)
	for i := len(list) - 1; i >= 0; i-- {
		var zr io.Reader
		var err error
		switch list[i] {
		case "gzip", "x-gzip":
			zr, err = gzip.NewReader(dec)
		case "deflate":
			zr, err = zlib.NewReader(dec)
		default:
			return nil, encodedRefusal("a request body in Content-Encoding " + strconv.Quote(truncate(list[i], 20)) + " cannot be searched for placeholders; send it unencoded, gzip or deflate")
		}
		if err != nil {
			return nil, encodedRefusal("the request body is not valid " + list[i])
		}
		dec = zr
	}
	n, err := io.Copy(io.Discard, newScanReader(io.LimitReader(dec, maxDecodedScan+1), secrets))
	var pe *errPlaceholderInBody
	switch {
	case errors.As(err, &pe):
		return nil, err
	case err != nil:
		return nil, encodedRefusal("the request body does not decode as its Content-Encoding says")
	case n > maxDecodedScan:
		return nil, encodedRefusal("the request body decodes to more than 64 MiB; it cannot be searched for placeholders")
	}
	return bytes.NewReader(raw), nil
}

// unbindReader writes each secret's placeholder over its real value in a
// response stream, so a bound host that echoes the credential back shows
// the box only the placeholder. Placeholders have the value's length, so
// the body's length is unchanged.
type unbindReader struct {
	r       io.Reader
	secrets []Secret
	buf     []byte // read but not yet returned
	keep    int
	eof     error
}

func newUnbindReader(r io.Reader, secrets []Secret) io.Reader {
	u := &unbindReader{r: r, secrets: secrets}
	for _, s := range secrets {
		u.keep = max(u.keep, len(s.Value)-1)
	}
	return u
}

func (u *unbindReader) Read(b []byte) (int, error) {
	for {
		// Bytes that cannot be the start of a value still unseen may go.
		ready := len(u.buf) - u.keep
		if u.eof != nil {
			ready = len(u.buf)
		}
		if ready > 0 {
			n := copy(b, u.buf[:ready])
			u.buf = u.buf[n:]
			return n, nil
		}
		if u.eof != nil {
			return 0, u.eof
		}
		chunk := make([]byte, max(len(b), 4096))
		n, err := u.r.Read(chunk)
		u.buf = append(u.buf, chunk[:n]...)
		for _, s := range u.secrets {
			u.buf = bytes.ReplaceAll(u.buf, []byte(s.Value), []byte(s.Placeholder))
		}
		if err != nil {
			u.eof = err
		}
	}
}

// echoMasks are the masks of exactly what the proxy wrote into one
// request: for each header value and the query it changed, the span that
// differs, written over by the box's own span. The real value written
// inside an encoding (a Basic credential's base64, an escaped query value)
// is not the value as such, and a host that echoes the header back would
// show it to the box in that encoding; the mask restores what the box
// sent. Spans keep their lengths: placeholders and values have the same
// shape.
func echoMasks(before, after http.Header, rawQuery, query string) []Secret {
	var out []Secret
	add := func(was, now string) {
		if was == now || len(was) != len(now) {
			return
		}
		i, j := 0, len(now)
		for i < j && was[i] == now[i] {
			i++
		}
		for j > i && was[j-1] == now[j-1] {
			j--
		}
		out = append(out, Secret{Name: "echo", Value: now[i:j], Placeholder: was[i:j]})
	}
	for name, vs := range after {
		for j, v := range vs {
			if old := before[name]; j < len(old) {
				add(old[j], v)
			}
		}
	}
	add(rawQuery, query)
	return out
}

// unbindHeader does the same for response header values.
func unbindHeader(h http.Header, secrets []Secret) {
	for _, vs := range h {
		for i, v := range vs {
			for _, s := range secrets {
				v = strings.ReplaceAll(v, s.Value, s.Placeholder)
			}
			vs[i] = v
		}
	}
}

// RequestRule limits the requests to the hosts Match admits: a request
// must name one of Methods (empty: any) and a path one of Paths matches
// (empty: any). When several rules match a host, a request passes if any
// of them admits it.
type RequestRule struct {
	// Rule names the policy entry, for the audit record.
	Rule  string
	Match func(host string, port int) bool
	// Methods are upper-case method names.
	Methods []string
	// Paths are globs over the decoded path: "*" matches within one
	// segment, a "**" segment any number of segments (ValidPathGlob).
	Paths []string
	// Reason is shown to the agent when a request is refused.
	Reason string
	// Layer groups rules: a request must pass every layer that has a rule
	// matching its host (a narrowed policy adds a layer, which can only
	// restrict).
	Layer int
}

// ValidPathGlob reports whether g is a request-rule path glob: it starts
// with "/", and each segment is "**" or a valid path.Match pattern.
func ValidPathGlob(g string) error {
	if !strings.HasPrefix(g, "/") {
		return errors.New("a path glob starts with /")
	}
	for seg := range strings.SplitSeq(g[1:], "/") {
		if seg == "**" {
			continue
		}
		if strings.Contains(seg, "**") {
			return errors.New(`"**" must be a whole segment`)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("segment %q: %w", seg, err)
		}
	}
	return nil
}

// matchPath matches a clean, decoded path against a glob.
func matchPath(glob, p string) bool {
	return matchSegs(strings.Split(glob[1:], "/"), strings.Split(p[1:], "/"))
}

func matchSegs(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(p); i++ {
				if matchSegs(g[1:], p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, _ := path.Match(g[0], p[0]); !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// cleanPath decodes an origin-form path for matching, refusing every
// spelling two servers could read differently: an encoded "/" or "\", a
// "\", an empty, "." or ".." segment, a NUL.
func cleanPath(raw string) (string, error) {
	low := strings.ToLower(raw)
	if strings.Contains(low, "%2f") || strings.Contains(low, "%5c") || strings.Contains(low, "%00") {
		return "", errors.New("the path holds an encoded slash, backslash or NUL")
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] == '%' && (i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2])) {
			return "", errors.New("the path holds a malformed percent-escape")
		}
	}
	p := percentDecode(raw)
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return "", errors.New("the path is not a plain absolute path")
	}
	if p == "/" {
		return p, nil
	}
	for seg := range strings.SplitSeq(strings.TrimSuffix(p[1:], "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", errors.New(`the path holds an empty, "." or ".." segment`)
		}
	}
	return p, nil
}

// overrideHeaders are headers many servers, frameworks and front ends
// read in place of the request line's method or path or of the Host
// header: a request decided as "GET /repos/acme/x" for one host could be
// run as another method, on another path or host.
var overrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
	"X-Original-Url", "X-Rewrite-Url", "X-Override-Url", "X-Forwarded-Host", "X-Forwarded-Server",
	"X-Host", "X-Original-Host", "X-Forwarded-Prefix", "Forwarded"}

// overrideHeader says why a request the proxy decides by its method, path
// and host is refused for carrying one of overrideHeaders; "" when it
// carries none.
func overrideHeader(h http.Header) string {
	for _, name := range overrideHeaders {
		if _, ok := h[name]; ok {
			return "the request carries " + name + ", which servers read as another method, path or host than the one decided; send the request itself"
		}
	}
	return ""
}

// rulesFor returns the rules that apply to host:port.
func (p *Proxy) rulesFor(host string, port int) []*RequestRule {
	var out []*RequestRule
	for i := range p.o.Rules {
		if r := &p.o.Rules[i]; r.Match != nil && r.Match(host, port) {
			out = append(out, r)
		}
	}
	return out
}

// checkRules decides one request against the rules for its host. ok with
// rule "" means no rule applies. Every layer with a rule for the host must
// admit the request; within a layer, any of its rules may.
func checkRules(rules []*RequestRule, method, rawPath string) (ok bool, rule, reason string) {
	if len(rules) == 0 {
		return true, "", ""
	}
	clean, err := cleanPath(rawPath)
	if err != nil {
		return false, rules[0].Rule, err.Error()
	}
	layers := map[int][]*RequestRule{}
	var order []int
	for _, r := range rules {
		if _, ok := layers[r.Layer]; !ok {
			order = append(order, r.Layer)
		}
		layers[r.Layer] = append(layers[r.Layer], r)
	}
	for _, l := range order {
		rs := layers[l]
		admitted := false
		for _, r := range rs {
			if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
				continue
			}
			if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(g string) bool { return matchPath(g, clean) }) {
				continue
			}
			admitted, rule = true, r.Rule
			break
		}
		if !admitted {
			r := rs[0]
			why := "the request is outside this host's request rules"
			if r.Reason != "" {
				why += ": " + r.Reason
			}
			return false, r.Rule, why
		}
	}
	return true, rule, ""
}
