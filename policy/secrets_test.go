package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseSecretsAndRequestRules(t *testing.T) {
	doc := `
net:
  allow:
    - github.com
    - {host: api.github.com, methods: [GET, HEAD], paths: ["/repos/acme/**"], reason: "read-only for this agent"}
env:
  allow: [GITHUB_TOKEN]
secrets:
  GITHUB_TOKEN: {hosts: [api.github.com, github.com], header: "Authorization: Bearer {}"}
  GIT_TOKEN: {hosts: [github.com], basic: "x-access-token:{}"}
  MAPS_KEY: {hosts: [maps.example.com], query: key}
  AWS_SECRET_ACCESS_KEY: {hosts: [s3.amazonaws.com], sigv4: AWS_ACCESS_KEY_ID}
limits: {model_tokens: 500k}
`
	p, err := Parse("p.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Net.Allow, ","); got != "github.com,api.github.com" {
		t.Fatalf("allow = %s", got)
	}
	if len(p.Net.Rules) != 1 || p.Net.Rules[0].Host != "api.github.com" || p.Net.Rules[0].Reason == "" {
		t.Fatalf("rules = %+v", p.Net.Rules)
	}
	if b := p.Secrets["GITHUB_TOKEN"]; b.HeaderName() != "Authorization" || len(b.Hosts) != 2 {
		t.Fatalf("binding = %+v", b)
	}
	if !p.Withheld("GITHUB_TOKEN") || p.Withheld("HOME") || !p.Withheld("AWS_ACCESS_KEY_ID") {
		t.Fatal("Withheld")
	}
	if p.Limits.ModelTokens != 500000 || p.Secrets["AWS_SECRET_ACCESS_KEY"].Form() != "AWS SigV4 signature with key ID AWS_ACCESS_KEY_ID" {
		t.Fatalf("model_tokens = %d, sigv4 form %q", p.Limits.ModelTokens, p.Secrets["AWS_SECRET_ACCESS_KEY"].Form())
	}
	// The JSON form reads back to the same policy.
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse("p.json", js)
	if err != nil {
		t.Fatalf("reading back %s: %v", js, err)
	}
	js2, _ := json.Marshal(q)
	if string(js) != string(js2) {
		t.Fatalf("round trip differs:\n%s\n%s", js, js2)
	}
	// A narrowing cannot add a host or lift a rule.
	n, err := ParseNarrowing("n.yaml", []byte(`
net:
  allow: [{host: api.github.com, methods: [GET]}]
secrets:
  GITHUB_TOKEN: {hosts: [api.github.com, evil.example], header: "Authorization: Bearer {}"}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Narrow(n)
	if h := r.Secrets["GITHUB_TOKEN"].Hosts; len(h) != 1 || h[0] != "api.github.com" {
		t.Fatalf("narrowed hosts = %v", h)
	}
	if _, ok := r.Secrets["GIT_TOKEN"]; ok || !r.Withheld("GIT_TOKEN") {
		t.Fatal("a secret the narrowing withdrew must stay withheld, not pass in clear")
	}
	if l := r.RequestRuleLayers(); len(l) != 2 {
		t.Fatalf("layers = %v", l)
	}
}

func TestParseSecretsRefused(t *testing.T) {
	for name, doc := range map[string]string{
		"no hosts":           `secrets: {T: {header: "Authorization: Bearer {}"}}`,
		"two forms":          `secrets: {T: {hosts: [a.example], header: "X: {}", query: k}}`,
		"wildcard host":      `secrets: {T: {hosts: ["*.example.com"], header: "X: {}"}}`,
		"no placeholder":     `secrets: {T: {hosts: [a.example], header: "Authorization: Bearer"}}`,
		"env.set conflict":   "env: {set: {T: x}}\nsecrets: {T: {hosts: [a.example], query: k}}",
		"bad method":         `net: {allow: [{host: a.example, methods: [get]}]}`,
		"relative path":      `net: {allow: [{host: a.example, paths: ["repos/**"]}]}`,
		"partial globstar":   `net: {allow: [{host: a.example, paths: ["/a**"]}]}`,
		"mapping sans host":  `net: {allow: [{methods: [GET]}]}`,
		"unknown rule key":   `net: {allow: [{host: a.example, verbs: [GET]}]}`,
		"model with slash":   `models: {allow: ["a/b"]}`,
		"sigv4 names itself": `secrets: {K: {hosts: [a.example], sigv4: K}}`,
		"sigv4 bad name":     `secrets: {K: {hosts: [a.example], sigv4: "a b"}}`,
		"sigv4 id bound too": "secrets:\n  K: {hosts: [a.example], sigv4: ID}\n  ID: {hosts: [a.example], header: \"X: {}\"}",
		"sigv4 id set":       "env: {set: {ID: x}}\nsecrets: {K: {hosts: [a.example], sigv4: ID}}",
		"tokens zero":        `limits: {model_tokens: 0}`,
		"tokens words":       `limits: {model_tokens: lots}`,
		"tokens fraction":    `limits: {model_tokens: 1.5k}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("p.yaml", []byte(doc)); err == nil {
				t.Fatalf("%s: accepted", doc)
			}
		})
	}
}

func TestModelsNarrow(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`models: {allow: ["claude-*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !p.ModelAllowed("claude-sonnet-4") || p.ModelAllowed("gpt-4o") {
		t.Fatal("ModelAllowed")
	}
	n, err := ParseNarrowing("n.yaml", []byte(`models: {allow: ["gpt-*", "claude-opus-*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	q := p.Narrow(n)
	if q.ModelAllowed("gpt-4o") || q.ModelAllowed("claude-sonnet-4") || !q.ModelAllowed("claude-opus-4") {
		t.Fatal("a narrowing widened or failed to narrow the models")
	}
	budget, _ := Parse("b.yaml", []byte("limits: {model_tokens: 2M}"))
	small, _ := ParseNarrowing("s.yaml", []byte("limits: {model_tokens: 1000}"))
	if got := budget.Narrow(small).Limits.ModelTokens; got != 1000 {
		t.Fatalf("narrowed model_tokens = %d, want 1000", got)
	}
	if got := small.Limits.ModelTokens; budget.Narrow(&Policy{}).Limits.ModelTokens != 2000000 || got != 1000 {
		t.Fatal("a narrowing without a budget lifted it")
	}
	none, _ := Parse("x.yaml", []byte(`net: {allow: []}`))
	if none.HasModels() || none.Narrow(n).HasModels() {
		t.Fatal("a narrowing turned the model proxy on")
	}
}
