package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/airlock-run/airlock/netrule"
)

// SecretBinding says where a credential may go. The box holds only a
// placeholder of the variable's shape; the egress proxy writes the real
// value (from the caller's environment) in the one place named here, in
// requests to Hosts over intercepted TLS, and refuses a request carrying
// the placeholder anywhere else. Exactly one of Header, Basic, Query and
// SigV4 is given. See docs/secrets.md.
type SecretBinding struct {
	// Hosts are exact host names (no wildcards, no ports).
	Hosts []string `json:"hosts"`
	// Header is "Name: template" with "{}" where the value goes, e.g.
	// "Authorization: Bearer {}".
	Header string `json:"header,omitempty"`
	// Basic is "user:{}" (or "{}:password"): the value inside an
	// Authorization: Basic credential, as git over HTTPS sends it.
	Basic string `json:"basic,omitempty"`
	// Query names the URL query parameter that carries the value.
	Query string `json:"query,omitempty"`
	// SigV4, on an AWS secret access key, names the variable holding its
	// access key ID (AWS_ACCESS_KEY_ID), which is phantom too: requests to
	// Hosts the box signs (AWS Signature Version 4) with the placeholders
	// are signed again with the real pair.
	SigV4 string `json:"sigv4,omitempty"`
}

// Form names where the binding writes the value, for listings.
func (b SecretBinding) Form() string {
	switch {
	case b.Header != "":
		return "header " + strconv.Quote(b.Header)
	case b.Basic != "":
		return "basic " + strconv.Quote(b.Basic)
	case b.Query != "":
		return "query parameter " + b.Query
	case b.SigV4 != "":
		return "AWS SigV4 signature with key ID " + b.SigV4
	}
	return ""
}

// HeaderName is the header a Header binding names; "" for others.
func (b SecretBinding) HeaderName() string {
	name, _, _ := strings.Cut(b.Header, ":")
	return strings.TrimSpace(name)
}

// RequestRule limits the requests allowed to the hosts of one net.allow
// entry by method and path (docs/secrets.md).
type RequestRule struct {
	// Host is the net.allow entry the rule came with.
	Host    string   `json:"host"`
	Methods []string `json:"methods,omitempty"`
	// Paths are globs over the decoded path: "*" within a segment, a "**"
	// segment across segments.
	Paths  []string `json:"paths,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// RequestRuleLayers returns the request rules of p and of every policy it
// was narrowed from, one list per policy: a request must pass every layer
// with a rule for its host, so a narrowing policy's rules only restrict.
func (p *Policy) RequestRuleLayers() [][]RequestRule {
	var out [][]RequestRule
	for q := p; q != nil; q = q.within {
		if len(q.Net.Rules) > 0 {
			out = append(out, q.Net.Rules)
		}
	}
	return out
}

// narrowSecrets keeps the bindings of p that n also names (all of them
// when n names none), each to the hosts both name: a narrowing policy can
// withdraw a credential or a host, never add one.
func narrowSecrets(p, n map[string]SecretBinding) map[string]SecretBinding {
	if p == nil || n == nil {
		return maps.Clone(p)
	}
	out := map[string]SecretBinding{}
	for name, b := range p {
		nb, ok := n[name]
		if !ok {
			continue
		}
		q := b
		q.Hosts = nil
		for _, h := range b.Hosts {
			if slices.Contains(nb.Hosts, h) {
				q.Hosts = append(q.Hosts, h)
			}
		}
		if len(q.Hosts) > 0 {
			out[name] = q
		}
	}
	return out
}

// httpMethods are the methods a request rule may name.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
	"PROPFIND", "REPORT", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK"}

// allowEntry reads one net.allow item: an entry string, or a mapping
// {host, methods, paths, reason}. It returns the entry and, for a mapping
// with methods or paths, its rule.
func (ps *parser) allowEntry(n *yaml.Node, field string) (string, *RequestRule, bool) {
	checkEntry := func(s string) error {
		if _, err := netrule.Parse([]string{s}, nil); err != nil {
			if u := errors.Unwrap(err); u != nil {
				return u
			}
			return err
		}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		s, ok := ps.str(n, field, false)
		if !ok {
			return "", nil, false
		}
		if err := checkEntry(s); err != nil {
			ps.fail(n, field, "%q: %v", s, err)
			return "", nil, false
		}
		return s, nil, true
	}
	r := &RequestRule{}
	ps.mapping(n, field, []string{"host", "methods", "paths", "reason"}, func(key string, k, v *yaml.Node) {
		f := field + "." + key
		switch key {
		case "host":
			if s, ok := ps.str(v, f, false); ok {
				if err := checkEntry(s); err != nil {
					ps.fail(v, f, "%q: %v", s, err)
				}
				r.Host = s
			}
		case "methods":
			r.Methods = ps.list(v, f, func(s string) error {
				if !slices.Contains(httpMethods, s) {
					return fmt.Errorf("want an upper-case HTTP method (%s)", strings.Join(httpMethods, ", "))
				}
				return nil
			})
		case "paths":
			r.Paths = ps.list(v, f, checkRequestPath)
		case "reason":
			if s, ok := ps.str(v, f, false); ok {
				if len(s) > 200 || strings.ContainsAny(s, "\r\n\x00") {
					ps.fail(v, f, "a reason is one line of at most 200 bytes")
				}
				r.Reason = s
			}
		}
	})
	if ps.err != nil {
		return "", nil, false
	}
	if r.Host == "" {
		ps.fail(n, field+".host", "an entry written as a mapping needs a host")
		return "", nil, false
	}
	if len(r.Methods) == 0 && len(r.Paths) == 0 {
		return r.Host, nil, true
	}
	return r.Host, r, true
}

// checkRequestPath validates a request-rule path glob: it starts with
// "/", and each segment is "**" or a glob without "**" in it.
func checkRequestPath(g string) error {
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
		if seg == "." || seg == ".." {
			return errors.New(`"." and ".." segments never match a request`)
		}
		if err := checkWordGlob(seg); err != nil {
			return fmt.Errorf("segment %q: %v", seg, err)
		}
	}
	return nil
}

// secrets reads the secrets section.
func (ps *parser) secrets(n *yaml.Node, p *Policy) {
	p.Secrets = map[string]SecretBinding{}
	ps.mapping(n, "secrets", nil, func(name string, k, v *yaml.Node) {
		f := "secrets." + name
		if err := checkEnvName(name, false); err != nil {
			ps.fail(k, f, "%v", err)
			return
		}
		var b SecretBinding
		ps.mapping(v, f, []string{"hosts", "header", "basic", "query", "sigv4"}, func(key string, k, v *yaml.Node) {
			ff := f + "." + key
			switch key {
			case "hosts":
				b.Hosts = ps.list(v, ff, func(s string) error {
					c, err := netrule.Canonical(s)
					if err != nil {
						return err
					}
					if c != s {
						return fmt.Errorf("write the host as %q", c)
					}
					return nil
				})
			case "header":
				if s, ok := ps.str(v, ff, false); ok {
					name, tmpl, ok := strings.Cut(s, ":")
					if !ok || !validHeaderName(strings.TrimSpace(name)) || strings.Count(tmpl, "{}") != 1 || strings.ContainsAny(tmpl, "\r\n\x00") {
						ps.fail(v, ff, `%q: want "Header-Name: template" with one {} where the value goes`, s)
					}
					b.Header = s
				}
			case "basic":
				if s, ok := ps.str(v, ff, false); ok {
					if strings.Count(s, "{}") != 1 || !strings.Contains(s, ":") || strings.ContainsAny(s, "\r\n\x00") {
						ps.fail(v, ff, `%q: want "user:{}" with one {} where the value goes`, s)
					}
					b.Basic = s
				}
			case "query":
				if s, ok := ps.str(v, ff, false); ok {
					if s == "" || strings.ContainsAny(s, "&=#?% \t\r\n") {
						ps.fail(v, ff, "%q: want a query parameter name", s)
					}
					b.Query = s
				}
			case "sigv4":
				if s, ok := ps.str(v, ff, false); ok {
					if err := checkEnvName(s, false); err != nil || s == name {
						ps.fail(v, ff, "%q: want the name of the variable holding the access key ID (AWS_ACCESS_KEY_ID)", s)
					}
					b.SigV4 = s
				}
			}
		})
		if ps.err != nil {
			return
		}
		forms := 0
		for _, s := range []string{b.Header, b.Basic, b.Query, b.SigV4} {
			if s != "" {
				forms++
			}
		}
		switch {
		case len(b.Hosts) == 0:
			ps.fail(v, f+".hosts", "a secret needs the hosts it may be sent to")
		case forms != 1:
			ps.fail(v, f, "give exactly one of header, basic, query and sigv4")
		}
		p.Secrets[name] = b
	})
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// checkSecrets refuses a policy whose secrets contradict its env section:
// a fixed value for the same name would put something else in the box.
func checkSecrets(ps *parser, root *yaml.Node, p *Policy) {
	for name, b := range p.Secrets {
		if _, ok := p.Env.Set[name]; ok {
			ps.fail(root, "secrets."+name, "env.set also sets %s; a secret's variable holds its placeholder", name)
			return
		}
		if b.SigV4 == "" {
			continue
		}
		if _, ok := p.Env.Set[b.SigV4]; ok {
			ps.fail(root, "secrets."+name+".sigv4", "env.set also sets %s; the key ID's variable holds its placeholder", b.SigV4)
			return
		}
		if _, ok := p.Secrets[b.SigV4]; ok {
			ps.fail(root, "secrets."+name+".sigv4", "%s is bound by the SigV4 binding; it cannot have a binding of its own", b.SigV4)
			return
		}
	}
}

// MarshalJSON writes net.allow as a policy spells it: an entry with
// request rules as a mapping.
func (n Net) MarshalJSON() ([]byte, error) {
	allow := make([]any, 0, len(n.Allow))
	used := map[int]bool{}
	for _, e := range n.Allow {
		var item any = e
		for i, r := range n.Rules {
			if r.Host == e && !used[i] {
				used[i] = true
				item = r
				break
			}
		}
		allow = append(allow, item)
	}
	type plain struct {
		Allow []any    `json:"allow"`
		Deny  []string `json:"deny,omitempty"`
		DNS   string   `json:"dns"`
	}
	return json.Marshal(plain{Allow: allow, Deny: n.Deny, DNS: n.DNS})
}

// Withheld reports whether name is a secret in p or in any policy it was
// narrowed from: its real value never enters a box, even when env.allow
// names it or a narrowing withdrew the binding.
func (p *Policy) Withheld(name string) bool {
	for q := p; q != nil; q = q.within {
		if _, ok := q.Secrets[name]; ok {
			return true
		}
		for _, b := range q.Secrets {
			if b.SigV4 == name {
				return true
			}
		}
	}
	return false
}

// Models is the models section: the model names the model proxy passes,
// as globs ("claude-*", "gpt-4o*").
type Models struct {
	Allow []string `json:"allow"`
}

func (ps *parser) models(n *yaml.Node, p *Policy) {
	m := &Models{}
	ps.mapping(n, "models", []string{"allow"}, func(key string, k, v *yaml.Node) {
		m.Allow = ps.list(v, "models.allow", func(s string) error {
			if s == "" || strings.ContainsAny(s, "/ \t\r\n") {
				return errors.New("a model name glob has no spaces or slashes")
			}
			return checkWordGlob(s)
		})
	})
	if m.Allow == nil {
		m.Allow = []string{}
	}
	p.Models = m
}

// HasModels reports whether the model proxy is on for p: p and every
// policy it was narrowed from have a models section.
func (p *Policy) HasModels() bool {
	for q := p; q != nil; q = q.within {
		if q.Models == nil {
			return false
		}
	}
	return true
}

// ModelAllowed reports whether p and every policy it was narrowed from
// allow the model (a narrowing policy without a models section adds no
// condition).
func (p *Policy) ModelAllowed(model string) bool {
	if !p.HasModels() {
		return false
	}
	for q := p; q != nil; q = q.within {
		if !slices.ContainsFunc(q.Models.Allow, func(g string) bool { ok, _ := path.Match(g, model); return ok }) {
			return false
		}
	}
	return true
}
