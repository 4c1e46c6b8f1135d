package egress

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// AWS Signature Version 4 re-signing. A box that holds placeholder AWS
// keys signs its requests with the placeholder secret; the proxy checks
// that signature (so it re-signs only what the box itself composed and
// signed, header for header), writes the real key ID and a signature made
// with the real secret in its place, and sends the request on. The
// signature covers the method, path, query, the headers the box chose to
// sign and the payload's hash, so nothing the box signed can change on the
// way. The algorithm is AWS's published one: a canonical request, a string
// to sign naming the credential scope, and an HMAC-SHA256 chain from the
// secret through date, region and service.

const sigv4Algorithm = "AWS4-HMAC-SHA256"

// sigv4Auth is a parsed SigV4 Authorization header.
type sigv4Auth struct {
	keyID                         string
	date, region, service, suffix string
	signed                        []string // lower-case header names, sorted
	signature                     string
}

func (a *sigv4Auth) scope() string {
	return a.date + "/" + a.region + "/" + a.service + "/" + a.suffix
}

// parseSigV4 reads "AWS4-HMAC-SHA256 Credential=ID/DATE/REGION/SERVICE/aws4_request,
// SignedHeaders=a;b, Signature=HEX". ok is false for anything else.
func parseSigV4(v string) (*sigv4Auth, bool) {
	alg, rest, ok := strings.Cut(v, " ")
	if !ok || alg != sigv4Algorithm {
		return nil, false
	}
	a := &sigv4Auth{}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || seen[k] {
			return nil, false
		}
		seen[k] = true
		switch k {
		case "Credential":
			f := strings.Split(val, "/")
			if len(f) != 5 || f[4] != "aws4_request" || len(f[1]) != 8 {
				return nil, false
			}
			a.keyID, a.date, a.region, a.service, a.suffix = f[0], f[1], f[2], f[3], f[4]
		case "SignedHeaders":
			a.signed = strings.Split(val, ";")
			if !slices.IsSorted(a.signed) || !slices.Contains(a.signed, "host") {
				return nil, false
			}
			for _, h := range a.signed {
				if h == "" || h != strings.ToLower(h) {
					return nil, false
				}
			}
		case "Signature":
			if len(val) != 64 {
				return nil, false
			}
			if _, err := hex.DecodeString(val); err != nil {
				return nil, false
			}
			a.signature = val
		default:
			return nil, false
		}
	}
	if a.keyID == "" || a.signed == nil || a.signature == "" {
		return nil, false
	}
	return a, true
}

// sigv4Request is what a signature covers.
type sigv4Request struct {
	method, rawPath, rawQuery string
	// header gives the values of a signed header (lower-case name).
	header      func(name string) []string
	payloadHash string
	amzDate     string
}

// sign returns the signature of r under a's scope and signed headers with
// secret. escapeTwice encodes the path once more, as every service but S3
// does.
func (r *sigv4Request) sign(a *sigv4Auth, secret string, escapeTwice bool) (string, bool) {
	query, ok := canonicalQuery(r.rawQuery)
	if !ok {
		return "", false
	}
	uri := r.rawPath
	if uri == "" {
		uri = "/"
	}
	if escapeTwice {
		uri = awsEscape(uri, false)
	}
	var hb strings.Builder
	for _, name := range a.signed {
		vals := r.header(name)
		if vals == nil {
			return "", false
		}
		for i, v := range vals {
			vals[i] = strings.Join(strings.Fields(v), " ")
		}
		hb.WriteString(name + ":" + strings.Join(vals, ",") + "\n")
	}
	canon := strings.Join([]string{r.method, uri, query, hb.String(), strings.Join(a.signed, ";"), r.payloadHash}, "\n")
	sum := sha256.Sum256([]byte(canon))
	toSign := sigv4Algorithm + "\n" + r.amzDate + "\n" + a.scope() + "\n" + hex.EncodeToString(sum[:])
	k := hmacSHA256([]byte("AWS4"+secret), a.date)
	for _, s := range []string{a.region, a.service, a.suffix} {
		k = hmacSHA256(k, s)
	}
	return hex.EncodeToString(hmacSHA256(k, toSign)), true
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// canonicalQuery sorts the query's parameters by name, then value, each
// encoded as SigV4 says (unreserved bytes as is, everything else %XX).
func canonicalQuery(raw string) (string, bool) {
	if raw == "" {
		return "", true
	}
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return "", false
	}
	var parts []string
	for k, vs := range vals {
		for _, v := range vs {
			parts = append(parts, awsEscape(k, true)+"="+awsEscape(v, true))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "&"), true
}

// awsEscape percent-encodes every byte but the unreserved ones (and "/"
// unless all).
func awsEscape(s string, all bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !all) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteString(strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	return b.String()
}

// sigv4Pair is a SigV4 binding: the secret access key and its key ID,
// both phantom.
type sigv4Pair struct{ secret, keyID *Secret }

// sigv4For returns the SigV4 binding for host, if any.
func sigv4For(secrets []Secret, host string) *sigv4Pair {
	for i := range secrets {
		s := &secrets[i]
		if s.SigV4KeyID == "" || !s.boundTo(host) {
			continue
		}
		for j := range secrets {
			if secrets[j].Name == s.SigV4KeyID {
				return &sigv4Pair{secret: s, keyID: &secrets[j]}
			}
		}
	}
	return nil
}

// payloadHash is the payload hash a signature covers: the box's
// x-amz-content-sha256 when it sent one, else the body's hash (body is
// nil when the body has not been read). why is set when the request cannot
// be re-signed.
func payloadHash(h http.Header, body []byte) (hash string, needBody bool, why string) {
	v := h.Get("X-Amz-Content-Sha256")
	switch {
	case v == "UNSIGNED-PAYLOAD":
		return v, false, ""
	case strings.HasPrefix(v, "STREAMING-"):
		return "", false, "a SigV4 streaming upload (" + truncate(v, 60) + ") signs each chunk with the box's key and cannot be re-signed; send the payload's SHA-256 in x-amz-content-sha256"
	case v != "":
		if _, err := hex.DecodeString(v); err != nil || len(v) != 64 {
			return "", false, "x-amz-content-sha256 is neither a SHA-256 nor UNSIGNED-PAYLOAD"
		}
		return strings.ToLower(v), false, ""
	case body == nil:
		return "", true, ""
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]), false, ""
}

// resignSigV4 checks the box's SigV4 signature, made with the placeholder
// secret and key ID, and writes into hdr an Authorization header signed
// with the real ones, over the request as it will be sent (hdr after the
// other bindings, Host as authority). It returns why the request is
// refused when the box's header is not a SigV4 one with the placeholder
// key ID or does not verify.
func resignSigV4(pair *sigv4Pair, method, rawPath, boxQuery, upQuery string, box, hdr http.Header, authority, hash string) string {
	auth := box.Values("Authorization")
	if len(auth) != 1 {
		return "a request to this host must carry one AWS SigV4 Authorization header, signed with the placeholder of " + pair.secret.Name
	}
	a, ok := parseSigV4(auth[0])
	if !ok {
		return "the Authorization header is not an AWS SigV4 (" + sigv4Algorithm + ") one"
	}
	if a.keyID != pair.keyID.Placeholder {
		return "the SigV4 credential is not the placeholder of " + pair.keyID.Name
	}
	amz := box.Values("X-Amz-Date")
	if len(amz) != 1 || len(amz[0]) != 16 || !strings.HasPrefix(amz[0], a.date) {
		return "a SigV4 request needs one X-Amz-Date of its credential's day"
	}
	values := func(h http.Header, host string) func(string) []string {
		return func(name string) []string {
			if name == "host" {
				return []string{host}
			}
			vs := h.Values(name)
			if vs == nil {
				return nil
			}
			return slices.Clone(vs)
		}
	}
	r := &sigv4Request{method: method, rawPath: rawPath, rawQuery: boxQuery, payloadHash: hash, amzDate: amz[0],
		header: values(box, box.Get("Host"))}
	twice := false
	got, ok := r.sign(a, pair.secret.Placeholder, false)
	if !ok {
		return "the SigV4 request cannot be put in canonical form (a signed header is missing or the query is malformed)"
	}
	if !hmac.Equal([]byte(got), []byte(a.signature)) {
		twice = true
		if got, _ = r.sign(a, pair.secret.Placeholder, true); !hmac.Equal([]byte(got), []byte(a.signature)) {
			return "the SigV4 signature does not verify with the placeholder of " + pair.secret.Name
		}
	}
	// Every signed header but Host goes upstream as the box sent it,
	// Content-Length included.
	out := hdr.Clone()
	if cl := box.Values("Content-Length"); cl != nil {
		out["Content-Length"] = cl
	}
	r.rawQuery, r.header = upQuery, values(out, authority)
	sig, ok := r.sign(a, pair.secret.Value, twice)
	if !ok {
		return "a header the box signed is not sent upstream; it cannot be signed again"
	}
	hdr.Set("Authorization", sigv4Algorithm+" Credential="+pair.keyID.Value+"/"+a.scope()+
		", SignedHeaders="+strings.Join(a.signed, ";")+", Signature="+sig)
	return ""
}
