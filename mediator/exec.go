package mediator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/wire"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/netrule"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/runner"
	"github.com/airlock-run/airlock/sandbox"
)

// BoxPATH is the search path of programs inside the box. LookPath for the
// policy's World resolves names on it, so a program is judged as the file the
// box would run.
const BoxPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BoxHome is HOME inside a tier-1 box: a private, empty tmpfs.
const BoxHome = "/home/airlock"

// ExecOptions say how an allowed command runs. The tier, the airlock
// binary, the environment and the announcements are the kernel's (Options).
type ExecOptions struct {
	// Stdin, Stdout and Stderr are the command's streams; nil is empty input
	// and discarded output.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// OutputCap bounds the output passed on; 0 is no bound.
	OutputCap int64
	// Binds are extra read-only files for the box (files handed between
	// tools).
	Binds []sandbox.Bind
	// Session marks a command that lives as long as its caller's session
	// (an MCP server behind the gateway): the policy's wall-clock limit
	// does not apply, and ctx ending tears the box down instead.
	Session bool
	// BeforeStart, when set, runs once the box is planned and before
	// anything of the command's starts (runner.Request.BeforeStart): an
	// error ends the call there with nothing run. The wiring waits in it
	// for the allowed decision's record, written beside the plan. Nil
	// runs nothing.
	BeforeStart func() error
	// Durable, when set, is waited for by every connection the box's
	// egress proxy allows, before it goes out: an error refuses the
	// connection, saying the run's audit record could not be made
	// durable. The wiring passes the wait for the run's records to be
	// durable (fsynced beside the box's start), so nothing leaves the box
	// under a decision a crash could still lose. Nil waits for nothing.
	Durable func() error
}

// ExecResult is how an allowed command ended, with the decision that let it
// run.
type ExecResult struct {
	runner.Result
	Outcome Outcome `json:"outcome"`
}

// Exec decides call (KindExec or KindShell) and, when it is allowed, runs it
// confined as the policy says. A refusal is a *errs.Denial and nothing runs;
// a box that cannot be built as the policy asks is an error and nothing runs
// either: it is never replaced by a weaker one.
func (k *Kernel) Exec(ctx context.Context, call Call, o ExecOptions) (ExecResult, error) {
	if call.Kind != KindExec && call.Kind != KindShell {
		return ExecResult{}, errs.Invalidf("exec: a %s call is not a command", call.Kind)
	}
	out, err := k.decideFront(ctx, call)
	res := ExecResult{Outcome: out}
	if err != nil {
		return res, err
	}
	argv := call.Argv
	if call.Kind == KindShell {
		argv = []string{"/bin/sh", "-c", call.Command}
	}
	b, err := k.box(ctx, call, "the command", true, o.Durable)
	if err != nil {
		return res, err
	}
	defer b.stop()
	b.spec.Binds = append(b.spec.Binds, o.Binds...)
	if o.Session {
		b.spec.Limits.Wall = 0
	}
	// The run is recorded as soon as it ended, before its box's host side
	// is torn down (runner.Request.Ended), or after the runner returned
	// when it never started or ran in a warm box.
	var recorded bool
	var rerr error
	ended := func(r runner.Result, err error) {
		recorded, rerr = true, k.recordRun(ctx, call, r, err)
	}
	r, err := k.runBox(ctx, runner.Request{Argv: argv, Spec: b.spec, Tier: b.tier,
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, OutputCap: o.OutputCap,
		BeforeStart: o.BeforeStart, Ended: ended}, o.Session)
	res.Result = r
	if !recorded {
		rerr = k.recordRun(ctx, call, r, err)
	}
	if rerr != nil && err == nil {
		err = rerr
	}
	return res, err
}

// box is the confinement of an allowed call: the policy in force for it
// (narrowed), mapped to mounts, environment and limits, refused when its
// writes reach airlock's own state, at the kernel's tier, with the egress
// proxy up when the policy allows a network and network is wanted; every
// connection it allows waits for durable first (ExecOptions.Durable).
type box struct {
	spec sandbox.Spec
	tier sandbox.Tier
	stop func()
}

func (k *Kernel) box(ctx context.Context, call Call, what string, network bool, durable func() error) (box, error) {
	p := k.Policy()
	// The tier-0 refusal reads the policy in force, not the narrowed
	// one: a narrowing that drops a binding leaves its real value in
	// airlock's environment all the same.
	base := p
	if call.Narrow != nil {
		p = p.Narrow(call.Narrow)
	}
	spec, err := specFor(p, k.world, k.run.environ)
	if err != nil {
		return box{}, err
	}
	spec.Caches = k.run.caches // weighed against this kernel's paths alone
	if err := k.checkPrivate(spec); err != nil {
		return box{}, err
	}
	if p.Sandbox.Home == policy.HomePersist {
		if spec.HomeDir, err = keptHome(k.world); err != nil {
			return box{}, err
		}
	}
	tier, err := k.tierFor(p, what)
	if err != nil {
		return box{}, err
	}
	if err := phantomNeedsBox(base, tier); err != nil {
		return box{}, err
	}
	b := box{spec: spec, tier: tier, stop: func() {}}
	// A bound secret's variable holds its placeholder in every box, with
	// or without a network: its real value never enters one.
	secrets, err := phantoms(p, k.run.environ)
	if err != nil {
		return box{}, err
	}
	b.spec.Env = withPlaceholders(b.spec.Env, secrets)
	if network && (len(p.Net.Allow) > 0 || p.HasModels()) && tier != sandbox.Tier0 {
		eg, err := k.startEgress(ctx, p, call, secrets, durable)
		if err != nil {
			return box{}, err
		}
		b.stop, b.spec.Net = eg.stop, eg.ns
		b.spec.Binds = append(b.spec.Binds, eg.binds...)
		b.spec.Env = withVars(b.spec.Env, eg.env)
	}
	return b, nil
}

// phantomNeedsBox refuses a run at tier 0 under a policy that binds
// secrets or allows models: unconfined, the command runs as airlock's
// caller and can read the real values from airlock's own environment
// (/proc/PID/environ), so a placeholder would promise what does not hold.
func phantomNeedsBox(p *policy.Policy, tier sandbox.Tier) error {
	if tier != sandbox.Tier0 || (len(p.Secrets) == 0 && !p.HasModels()) {
		return nil
	}
	return errs.Unavailablef("this policy binds secrets or allows models, whose real values stay out of the box; at sandbox tier 0 there is no box and the command could read them from airlock's own environment: run it at tier 1 (drop --sandbox off / isolation: none), or remove the secrets and models sections")
}

// phantoms makes the placeholders of p's secrets whose values the
// caller's environment holds: one per box, so a placeholder seen in one
// box means nothing in another. A secret absent from the environment is
// absent from the box too.
func phantoms(p *policy.Policy, environ []string) ([]egress.Secret, error) {
	if len(p.Secrets) == 0 {
		return nil, nil
	}
	vals := map[string]string{}
	for _, kv := range environ {
		if name, val, ok := strings.Cut(kv, "="); ok {
			vals[name] = val
		}
	}
	var out []egress.Secret
	for _, name := range sortedNames(p.Secrets) {
		b := p.Secrets[name]
		val, ok := vals[name]
		if !ok || val == "" {
			continue
		}
		ph, err := egress.Phantom(val)
		if err != nil {
			return nil, errs.Invalidf("secrets.%s: %v; a value the box must hold in clear cannot be a secret (docs/secrets.md)", name, err)
		}
		s := egress.Secret{Name: name, Value: val, Placeholder: ph, Hosts: b.Hosts, Header: b.HeaderName(), Basic: b.Basic != ""}
		if b.Query != "" {
			s.Query = b.Query
		}
		if b.SigV4 != "" {
			// The key ID is phantom too, bound to the same hosts; only
			// the re-signing writes it.
			id := vals[b.SigV4]
			if id == "" {
				return nil, errs.Invalidf("secrets.%s.sigv4: %s is not set; a SigV4 binding needs both the key ID and the secret", name, b.SigV4)
			}
			idPH, err := egress.Phantom(id)
			if err != nil {
				return nil, errs.Invalidf("secrets.%s.sigv4: %s: %v", name, b.SigV4, err)
			}
			s.SigV4KeyID = b.SigV4
			out = append(out, egress.Secret{Name: b.SigV4, Value: id, Placeholder: idPH, Hosts: b.Hosts})
		}
		out = append(out, s)
	}
	return out, nil
}

func sortedNames(m map[string]policy.SecretBinding) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// withPlaceholders sets each secret's variable to its placeholder.
func withPlaceholders(env []string, secrets []egress.Secret) []string {
	vars := map[string]string{}
	for _, s := range secrets {
		vars[s.Name] = s.Placeholder
	}
	return withVars(env, vars)
}

// withVars sets vars in env, replacing any earlier value, kept sorted.
func withVars(env []string, vars map[string]string) []string {
	if len(vars) == 0 {
		return env
	}
	out := make([]string, 0, len(env)+len(vars))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[name]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// BoxCAPath is where a box whose egress intercepts some hosts finds the
// trust bundle: the system's roots and the box's own CA.
const BoxCAPath = "/run/airlock-egress/ca.pem"

// caVars point the usual TLS stacks at BoxCAPath.
var caVars = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"}

// egressBox is what a started egress proxy adds to a box.
type egressBox struct {
	stop  func()
	ns    *sandbox.NetSpec
	binds []sandbox.Bind
	env   map[string]string
}

// checkPrivate refuses a box whose writable paths reach airlock's own
// state.
func (k *Kernel) checkPrivate(spec sandbox.Spec) error {
	if !spec.Writable {
		return nil
	}
	return CheckPrivate(k.private, spec.Write)
}

// CheckPrivate refuses when a box-writable path holds one of airlock's own
// files or directories, or lies inside one of them (a grant of the file
// store's blobs/ would let the box swap the files it is handed), at either
// spelling of each (as written, links resolved). It is not the call's
// fault: no call runs under such a policy, so airlock cannot run it (exit
// 125).
func CheckPrivate(private, writable []string) error {
	within := func(p, dir string) bool {
		return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
	}
	for _, w := range writable {
		for _, wf := range spellings(w) {
			for _, p := range private {
				for _, pf := range spellings(p) {
					if within(pf, wf) {
						return errs.Unavailablef("fs.write: %s holds airlock's own %s, which a box may never write; grant a narrower directory or name another place", w, p)
					}
					if within(wf, pf) {
						return errs.Unavailablef("fs.write: %s lies inside airlock's own %s, which a box may never write; grant a directory outside it", w, p)
					}
				}
			}
		}
	}
	return nil
}

// BoxWritable is every existing path a box under p may write in fix mode,
// absolute, in w.
func BoxWritable(p *policy.Policy, w policy.World) ([]string, error) {
	w.Mode = policy.Fix
	spec, err := specFor(p, w, nil)
	if err != nil {
		return nil, err
	}
	return spec.Write, nil
}

// spellings is a path as written and with its links resolved (as far as
// it exists).
func spellings(p string) []string {
	out := []string{filepath.Clean(p)}
	if r, err := Resolve(out[0]); err == nil && r != out[0] {
		out = append(out, r)
	}
	return out
}

// Resolve gives the symlink-resolved form of p. A path that does not exist
// yet resolves through its deepest existing ancestor, so a link in its
// parents still counts. It is the World.Resolve of a kernel on this host.
func Resolve(p string) (string, error) {
	rest := ""
	for cur := p; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func (k *Kernel) recordRun(ctx context.Context, call Call, r runner.Result, runErr error) error {
	if k.recorder == nil {
		return nil
	}
	fields := map[string]any{"exit_code": r.ExitCode, "description": r.Description}
	if r.WallTimeout {
		fields["wall_timeout"] = true
	}
	if runErr != nil {
		fields["error"] = runErr.Error()
	}
	return k.recorder.Record(ctx, Record{Kind: "run", Time: k.now(), CallDigest: call.Digest(), Call: call,
		Verdict: policy.Allow, Decider: "runner", Fields: fields})
}

// startEgress starts the box's allowlist proxy on a Unix socket of its own
// with a fresh token. The proxy decides with the policy's net section; every
// decision is recorded. A connection it allows goes out only once durable
// (when set) returned, and is refused when it failed.
//
// When the policy binds secrets or limits requests, the proxy intercepts
// those hosts with a CA made for this box alone: its key lives only in
// this process's memory; its certificate, with the system's roots, is the
// bundle the box is pointed at.
func (k *Kernel) startEgress(ctx context.Context, p *policy.Policy, call Call, secrets []egress.Secret, durable func() error) (eg egressBox, err error) {
	list, err := netrule.Parse(p.Net.Allow, p.Net.Deny)
	if err != nil {
		return eg, errs.Wrap(errs.Invalid, err, "net")
	}
	token, err := wire.NewToken()
	if err != nil {
		return eg, errs.Wrap(errs.Unavailable, err, "egress token")
	}
	rules, err := requestRules(p)
	if err != nil {
		return eg, err
	}
	opts := egress.Options{
		Box:   call.Digest()[7:19],
		Token: token,
		Check: afterDurable(durable, k.taintedCheck(ctx, func(host string, port int) egress.Verdict {
			ok, rule := list.Match(host, port)
			return egress.Verdict{Allow: ok, Rule: rule}
		})),
		AllowAddr: list.AllowsAddr,
		DenyAddr:  list.DeniesAddr,
		Secrets:   secrets,
		Rules:     rules,

		UpstreamRoots: k.egressRoots,
	}
	if p.HasModels() {
		provs, err := modelProviders(k.run.environ)
		if err != nil {
			return eg, err
		}
		opts.Models = &egress.Models{Allow: p.ModelAllowed, Providers: provs}
		if n := p.Limits.ModelTokens; n > 0 {
			opts.Models.Budget = &egress.TokenBudget{Limit: n, Used: &k.modelTokens, Held: &k.modelHeld}
		}
		for name, prov := range opts.Models.Providers {
			if t, ok := k.egressModels[name]; ok {
				t.Key = prov.Key
				opts.Models.Providers[name] = t
			}
		}
	}
	if len(secrets) > 0 || len(rules) > 0 {
		if opts.CA, err = egress.NewCA(opts.Box, k.now()); err != nil {
			return eg, errs.Wrap(errs.Unavailable, err, "egress ca")
		}
	}
	var flush func() error
	opts.Audit, flush = k.egressAudit(context.WithoutCancel(ctx), call)
	if p.Net.DNS == "none" {
		opts.Resolver = noResolver{}
	}
	px, err := egress.New(opts)
	if err != nil {
		return eg, errs.Wrap(errs.Unavailable, err, "egress proxy")
	}
	ln, path, dir, err := egress.Listen("")
	if err != nil {
		return eg, errs.Wrap(errs.Unavailable, err, "egress proxy")
	}
	if opts.CA != nil {
		// Only the certificate is written; the key never leaves memory.
		bundle := filepath.Join(dir, "ca.pem")
		if err := os.WriteFile(bundle, opts.CA.Bundle(), 0o644); err != nil {
			ln.Close()
			os.RemoveAll(dir)
			return eg, errs.Wrap(errs.Unavailable, err, "egress ca bundle")
		}
		eg.binds = []sandbox.Bind{{Src: bundle, Dst: BoxCAPath}}
		eg.env = map[string]string{}
		for _, v := range caVars {
			eg.env[v] = BoxCAPath
		}
	}
	go px.Serve(ln)
	eg.stop = func() {
		px.Close()
		ln.Close()
		os.RemoveAll(dir)
		// The proxy is closed: no refusal comes after the last summary.
		if err := flush(); err != nil {
			k.run.warn("egress: the count of refused connections could not be recorded: " + err.Error())
		}
	}
	eg.ns = &sandbox.NetSpec{ProxySocket: path, Token: token, Serve: px.ServeBox}
	return eg, nil
}

// modelKeys are the fixed variables of airlock's own environment the
// model proxy takes provider keys from, and the providers they open.
var modelKeys = map[string]egress.Provider{
	"OPENAI_API_KEY":    {Host: "api.openai.com", Port: 443, Header: "Authorization", Prefix: "Bearer "},
	"ANTHROPIC_API_KEY": {Host: "api.anthropic.com", Port: 443, Header: "X-Api-Key"},
}

var modelProviderNames = map[string]string{"OPENAI_API_KEY": "openai", "ANTHROPIC_API_KEY": "anthropic"}

// modelProviders opens each provider whose key the environment holds.
// AIRLOCK_MODEL_BASE_URL, the operator's, replaces the OpenAI endpoint
// with an OpenAI-compatible one (https://host[:port][/path], the path
// usually ending in /v1), still keyed by OPENAI_API_KEY.
func modelProviders(environ []string) (map[string]egress.Provider, error) {
	out := map[string]egress.Provider{}
	base := ""
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if prov, ok := modelKeys[name]; ok && val != "" {
			prov.Key = val
			out[modelProviderNames[name]] = prov
		}
		if name == "AIRLOCK_MODEL_BASE_URL" {
			base = val
		}
	}
	if base == "" {
		return out, nil
	}
	prov, ok := out["openai"]
	if !ok {
		prov = modelKeys["OPENAI_API_KEY"]
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errs.Invalidf("AIRLOCK_MODEL_BASE_URL: want https://host[:port][/path] (the model proxy speaks only verified TLS upstream)")
	}
	host, err := netrule.Canonical(u.Hostname())
	if err != nil {
		return nil, errs.Invalidf("AIRLOCK_MODEL_BASE_URL: the host %q: %v", u.Hostname(), err)
	}
	prov.Host, prov.Port = host, 443
	if ps := u.Port(); ps != "" {
		if prov.Port, err = strconv.Atoi(ps); err != nil || prov.Port < 1 || prov.Port > 65535 {
			return nil, errs.Invalidf("AIRLOCK_MODEL_BASE_URL: the port %q is not one", ps)
		}
	}
	prov.Path = strings.TrimSuffix(strings.TrimSuffix(u.EscapedPath(), "/"), "/v1")
	out["openai"] = prov
	return out, nil
}

// ModelEndpoints names the model providers a box's model proxy opens for
// environ (airlock's own environment) and where each is reached
// ("api.openai.com:443"): names and places only, never a key.
func ModelEndpoints(environ []string) (map[string]string, error) {
	provs, err := modelProviders(environ)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, p := range provs {
		out[name] = net.JoinHostPort(p.Host, strconv.Itoa(p.Port)) + p.Path
	}
	return out, nil
}

// requestRules turns the request rules of p and of the policies it was
// narrowed from into the proxy's, one layer per policy.
func requestRules(p *policy.Policy) ([]egress.RequestRule, error) {
	var out []egress.RequestRule
	for layer, rs := range p.RequestRuleLayers() {
		for i, r := range rs {
			l, err := netrule.Parse([]string{r.Host}, nil)
			if err != nil {
				return nil, errs.Wrap(errs.Invalid, err, "net.allow")
			}
			out = append(out, egress.RequestRule{
				Rule:    fmt.Sprintf("net.allow[%s]#%d", r.Host, i),
				Match:   func(host string, port int) bool { ok, _ := l.Match(host, port); return ok },
				Methods: r.Methods, Paths: r.Paths, Reason: r.Reason, Layer: layer,
			})
		}
	}
	return out, nil
}

// maxDestination bounds the destination a summary names: the host is the
// box's own string.
const maxDestination = 128

// egressAudit is the egress proxy's Audit hook for one box. Every allowed
// connection is recorded as it is, and so are the box's first refusals and
// then a trickle of them; past that rate refusals are counted
// (audit.Coalescer) into "egress.coalesced" records, so a box that refuses
// itself thousands of connections a second grows the host's audit log by
// a bounded amount (BenchmarkEgressFlood). flush records the last count;
// call it when the proxy is closed. A record that cannot be written is the
// hook's error: the proxy fails closed.
func (k *Kernel) egressAudit(ctx context.Context, call Call) (hook func(egress.Event) error, flush func() error) {
	digest := call.Digest()
	co := audit.NewCoalescer(audit.CoalesceOptions{})
	summary := func(s *audit.Summary) error {
		return k.record(ctx, Record{Kind: "egress.coalesced", Time: s.Last, CallDigest: digest,
			Verdict: policy.Deny, Reason: "refused connections counted past the record rate", Decider: "egress",
			Category: policy.CatNet, Fields: s.Fields()})
	}
	one := func(e egress.Event) error {
		v := policy.Deny
		if e.Allow {
			v = policy.Allow
		}
		return k.record(ctx, Record{Kind: "egress", Time: e.Start, CallDigest: digest,
			Verdict: v, Rule: e.Rule, Reason: e.Reason, Decider: "egress", Category: policy.CatNet,
			Fields: map[string]any{"event": e}})
	}
	hook = func(e egress.Event) error {
		if e.Allow {
			return one(e)
		}
		pass, due := co.Take(e.Start, destination(e), e.Reason)
		if due != nil {
			if err := summary(due); err != nil {
				return err
			}
		}
		if !pass {
			return nil
		}
		return one(e)
	}
	flush = func() error {
		if s := co.Flush(); s != nil {
			return summary(s)
		}
		return nil
	}
	return hook, flush
}

// destination names what a refused event asked for: the host and port,
// else the address, else how it asked (a connection without the token).
func destination(e egress.Event) string {
	var d string
	switch {
	case e.Host != "":
		d = net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	case e.Addr.IsValid():
		d = e.Addr.String()
	default:
		return e.Proto
	}
	if len(d) > maxDestination {
		d = d[:maxDestination] + "…"
	}
	return e.Proto + " " + d
}

var gitSafety = map[string]string{
	"GIT_CONFIG_COUNT":   "1",
	"GIT_CONFIG_KEY_0":   "safe.bareRepository",
	"GIT_CONFIG_VALUE_0": "explicit",
}

// noResolver answers every lookup with a refusal: with `dns: none` the box
// reaches only the addresses its allowlist names.
type noResolver struct{}

func (noResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return nil, errors.New("name resolution is off in this policy (net.dns: none)")
}

// specFor maps a policy to the confinement of a box: the one place a policy
// becomes mounts, an environment and limits. Relative paths are taken from
// the working directory, `~` from the caller's home; globs are expanded to
// what exists now. Writes are granted only in fix mode.
func specFor(p *policy.Policy, w policy.World, environ []string) (sandbox.Spec, error) {
	spec := sandbox.Spec{
		Workdir:    w.Workdir,
		Writable:   w.Mode == policy.Fix && len(p.FS.Write) > 0,
		PolicyFile: p.Source,
		Limits: sandbox.Limits{MemoryBytes: p.Limits.Memory, CPU: p.Limits.CPU,
			Wall: p.Limits.Wall, Pids: p.Limits.Pids},
		Ptrace: p.Sandbox.Ptrace,
		// The mounts hold the same list of files the host's tools trust
		// that the reader does, less what the policy unprotects.
		Unprotect: p.FS.Unprotect, UnattendedBuild: p.FS.UnattendedBuild,
	}
	var err error
	if spec.Read, err = expandPaths(p.FS.Read, w, "fs.read"); err != nil {
		return spec, err
	}
	if spec.Writable {
		if spec.Write, err = expandPaths(p.FS.Write, w, "fs.write"); err != nil {
			return spec, err
		}
	}
	spec.Env = boxEnv(p, w, environ)
	if p.Shell.Allow != nil {
		// The programs the policy lists are the only ones the kernel
		// lets a tier-1 box execute (Landlock).
		spec.Exec = &sandbox.ExecSpec{Programs: p.Shell.Allow, RunWritten: p.Shell.RunWritten}
	}
	return spec, nil
}

// boxEnv builds the box's environment from nothing: a fixed base, the
// caller's variables the policy names, then the policy's fixed values.
func boxEnv(p *policy.Policy, w policy.World, environ []string) []string {
	env := map[string]string{
		"PATH": BoxPATH, "HOME": BoxHome, "LANG": "C.UTF-8", "TERM": "dumb",
		"USER": "airlock", "LOGNAME": "airlock", "TMPDIR": "/tmp", "PWD": w.Workdir,
	}
	// git takes any directory holding HEAD, objects/ and refs/ for a bare
	// repository and runs its config (core.fsmonitor, hooks): an allowed
	// `git status` in a directory the agent prepared would run the agent's
	// program. Only repositories named explicitly are read as bare. The
	// agent cannot undo it: assigning GIT_* variables escalates.
	for k, v := range gitSafety {
		env[k] = v
	}
	// Granted caches by their variables; a variable the caller passes in
	// or the policy sets wins.
	for k, v := range cacheEnv(p, w) {
		env[k] = v
	}
	var c *policy.Checker
	if len(p.Env.Allow) > 0 {
		c, _ = p.Compile(w) // a policy that does not compile passes nothing in
	}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if name == "TERM" {
			env[name] = val
			continue
		}
		if p.Withheld(name) {
			continue // a secret: the box gets its placeholder (phantoms)
		}
		if _, ok := modelKeys[name]; ok && p.HasModels() {
			continue // the model proxy holds it
		}
		if c != nil && c.Env(name).Verdict == policy.Allow {
			env[name] = val
		}
	}
	for name, val := range p.Env.Set {
		env[name] = val
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// expandPaths turns policy path entries into existing absolute host paths.
// An entry that names nothing that exists is skipped: inside the box it does
// not exist either.
func expandPaths(entries []string, w policy.World, field string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for i, e := range entries {
		abs := e
		switch {
		case e == "~" || strings.HasPrefix(e, "~/"):
			if w.Home == "" {
				return nil, errs.Invalidf("%s[%d]: %q needs a home directory and the caller has none", field, i, e)
			}
			abs = filepath.Join(w.Home, strings.TrimPrefix(e, "~"))
		case !filepath.IsAbs(e):
			abs = filepath.Join(w.Workdir, e)
		}
		abs = filepath.Clean(abs)
		if !strings.ContainsAny(abs, "*?[") {
			if _, err := os.Lstat(abs); err == nil {
				add(abs)
			}
			continue
		}
		matches, err := globAll(abs)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "%s[%d]: %q", field, i, e)
		}
		for _, m := range matches {
			add(m)
		}
	}
	return out, nil
}

// maxGlobMatches bounds what one glob entry may expand to; a pattern that
// names more is better written as a directory.
const maxGlobMatches = 2000

// globAll expands a pattern where "**" matches any number of directories.
func globAll(pattern string) ([]string, error) {
	if !strings.Contains(pattern, "**") {
		return filepath.Glob(pattern)
	}
	root := pattern[:strings.Index(pattern, "**")]
	root = filepath.Dir(root + "x")
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if matchDoubleStar(pattern, path) {
			out = append(out, path)
			if len(out) > maxGlobMatches {
				return fmt.Errorf("matches more than %d paths; name a directory instead", maxGlobMatches)
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out, err
}

func matchDoubleStar(pattern, name string) bool {
	ps := strings.Split(pattern, "/")
	ns := strings.Split(name, "/")
	var match func(i, j int) bool
	match = func(i, j int) bool {
		for i < len(ps) {
			if ps[i] == "**" {
				for k := j; k <= len(ns); k++ {
					if match(i+1, k) {
						return true
					}
				}
				return false
			}
			if j >= len(ns) {
				return false
			}
			if ok, _ := filepath.Match(ps[i], ns[j]); !ok {
				return false
			}
			i, j = i+1, j+1
		}
		return j == len(ns)
	}
	return match(0, 0)
}

// RunResult is how a command that ran ended, and where (the runner's
// evidence).
type RunResult = runner.Result

// CheckBox starts a real tier-1 box that runs `true`, for `airlock sandbox
// check`: what happens, rather than what the host's files suggest. It
// returns how long the box took.
func CheckBox(ctx context.Context, exe string) (time.Duration, error) {
	_, took, err := runner.Check(ctx, exe)
	return took, err
}

// CheckGVisorBox runs a short self-test in a tier-2 (gVisor) box, for
// `airlock sandbox check`: tier 2 is reported only when it passes.
func CheckGVisorBox(ctx context.Context, exe string) (time.Duration, error) {
	return runner.CheckGVisor(ctx, exe)
}

// afterDurable is check with every Allow held until durable returned and
// turned into a refusal when it failed: a connection is data leaving the
// box, as much the run's effect as its output, and goes out only under a
// decision that is durable. (The wiring's durable is a sync.Once: only
// the first connection waits, and only for the fsync already under way.)
// A refusal is not held: nothing goes out. Nil durable is check.
func afterDurable(durable func() error, check func(context.Context, string, int) egress.Verdict) func(context.Context, string, int) egress.Verdict {
	if durable == nil {
		return check
	}
	return func(ctx context.Context, host string, port int) egress.Verdict {
		v := check(ctx, host, port)
		if !v.Allow {
			return v
		}
		if err := durable(); err != nil {
			return egress.Verdict{Rule: v.Rule, Reason: "was not let out: the run's audit record could not be made durable (check the disk holding airlock's audit log)"}
		}
		return v
	}
}

// taintedCheck is the egress proxy's check of a connection: the policy's
// list, and for a tainted caller a person's answer to every destination
// the list allows (decided as a net call, so the record says why). An
// answer holds for that destination for the rest of the command, so one
// program's many connections ask once.
func (k *Kernel) taintedCheck(ctx context.Context, list func(host string, port int) egress.Verdict) func(context.Context, string, int) egress.Verdict {
	var mu sync.Mutex
	asked := map[string]egress.Verdict{}
	return func(_ context.Context, host string, port int) egress.Verdict {
		v := list(host, port)
		if !v.Allow || k.taint() == "" {
			return v
		}
		key := net.JoinHostPort(host, strconv.Itoa(port))
		mu.Lock()
		defer mu.Unlock()
		if got, ok := asked[key]; ok {
			return got
		}
		_, err := k.Decide(ctx, Call{Kind: KindNet, Host: host, Port: port, Tool: "egress"})
		v = egress.Verdict{Allow: err == nil, Rule: "taint"}
		if err != nil {
			v.Reason = "the job is tainted and no person approved this destination"
		}
		asked[key] = v
		return v
	}
}
