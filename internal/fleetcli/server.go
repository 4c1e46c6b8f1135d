package fleetcli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// Server is `airlock server`'s run in the airlock-server binary, which
// links the Temporal server: start is jobs/server.Start.
func Server(start jobs.StartDevServer) func(ctx context.Context, env *cli.Env, args []string) error {
	return func(ctx context.Context, env *cli.Env, args []string) error {
		fs := cli.NewFlags(env, "airlock server", cli.ServerUsage, cli.ServerHelp)
		listen := fs.String("listen", cli.DefaultServerAddr, "loopback `address` of the HTTP API")
		state := fs.String("state", "", "state `directory` (default: $XDG_STATE_HOME/airlock/server)")
		tokenFile := fs.String("token-file", "", "bearer token `file` (default: STATE/token)")
		enrollFile := fs.String("enroll-token-file", "", "enrolment token `file` nodes enrol with (default: STATE/enroll-token)")
		temporalIP := fs.String("temporal-listen", "127.0.0.1", "the `IP` the Temporal frontend listens on for nodes (mutual TLS only; the default keeps it on loopback)")
		certLife := fs.Duration("node-cert-lifetime", pki.DefaultNodeLifetime, "how long a node's certificate is valid (the node renews it before)")
		claim := fs.Duration("claim-timeout", jobs.DefaultClaimTimeout, "how long a job waits for an eligible node")
		hooksFile := fs.String("hooks", "", "the hooks `file` (JSON; see above)")
		adminFile := fs.String("admin-token-file", "", "the admins' token `file` (default: STATE/admin-token)")
		fourEyes := fs.Bool("four-eyes", false, "a node's sandbox opt-out needs a second admin's approval")
		vetted := fs.String("vetted-models", "", "the vetted `models`, comma-separated")
		vettedFile := fs.String("vetted-models-file", "", "a `file` of vetted models, one a line")
		dev := fs.Bool("dev", false, "let every node take floor work (a developer's machine only)")
		maxWall := fs.Duration("max-wall", 0, "the most wall-clock time any job's box may run (0: the policy's)")
		maxMem := fs.String("max-memory", "", "the most memory any job's box may use, as `SIZE` (512M, 2G; default: the policy's)")
		tenantsFile := fs.String("tenants-file", "", "the tenants' operator token `file` (default: STATE/tenants)")
		poolQuota := &quotaFlag{what: "pool"}
		tenantQuota := &quotaFlag{what: "tenant"}
		fs.Var(poolQuota, "pool-quota", "the most jobs holding a box at once in a pool, as `POOL=N` (repeat it)")
		fs.Var(tenantQuota, "tenant-quota", "the most jobs holding a box at once for a tenant, as `TENANT=N` (repeat it)")
		var ext external
		fs.StringVar(&ext.hostPort, "temporal", "", "use the existing Temporal cluster at `HOST:PORT` instead of the embedded one (see above)")
		fs.StringVar(&ext.namespace, "namespace", "", "the existing cluster's `namespace` (default: "+jobs.DefaultNamespace+")")
		fs.StringVar(&ext.cert, "temporal-tls-cert", "", "the server's client certificate `file` (PEM) for the existing cluster")
		fs.StringVar(&ext.key, "temporal-tls-key", "", "its key `file` (PEM)")
		fs.StringVar(&ext.ca, "temporal-tls-ca", "", "the `file` of the CA (PEM) that issued the existing cluster's frontend certificate")
		fs.StringVar(&ext.authorizer, "temporal-authorizer", "", "`airlock`: the existing cluster runs airlock's authorizer (required with --temporal)")
		insecure := fs.Bool("insecure-listen", false, "also take plain HTTP on a non-loopback --listen address, where the API's tokens cross unencrypted (see above)")
		if err := cli.ParseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return cli.Usagef("airlock server takes no arguments (see --help)")
		}
		if *certLife < time.Minute {
			return cli.Usagef("--node-cert-lifetime %s: want at least 1m", *certLife)
		}
		if *claim <= 0 {
			return cli.Usagef("--claim-timeout %s: want a positive duration", *claim)
		}
		if *maxWall < 0 {
			return cli.Usagef("--max-wall %s: want a positive duration", *maxWall)
		}
		if err := ext.check(); err != nil {
			return err
		}
		mem, err := parseBytes(*maxMem)
		if err != nil {
			return cli.Usagef("--max-memory %q: %v", *maxMem, err)
		}
		dir, err := cli.FleetDir(env, *state, "server")
		if err != nil {
			return err
		}
		if *tokenFile == "" {
			*tokenFile = filepath.Join(dir, "token")
		}
		if *enrollFile == "" {
			*enrollFile = filepath.Join(dir, "enroll-token")
		}
		if *adminFile == "" {
			*adminFile = filepath.Join(dir, "admin-token")
		}
		if *tenantsFile == "" {
			*tenantsFile = filepath.Join(dir, "tenants")
		}
		hooks, err := readHooks(env, *hooksFile)
		if err != nil {
			return err
		}
		models, err := vettedModels(env, *vetted, *vettedFile)
		if err != nil {
			return err
		}
		return runServer(ctx, env, serverOptions{listen: *listen, dir: dir, tokenFile: cli.AbsFrom(env, *tokenFile), claim: *claim, hooks: hooks,
			adminFile: cli.AbsFrom(env, *adminFile), fourEyes: *fourEyes, models: models, dev: *dev, maxWall: *maxWall, maxMemory: mem, insecure: *insecure,
			enrollFile: cli.AbsFrom(env, *enrollFile), certLife: *certLife, temporalIP: *temporalIP, start: start,
			tenantsFile: cli.AbsFrom(env, *tenantsFile), poolQuota: poolQuota.m, tenantQuota: tenantQuota.m, external: ext})
	}
}

type serverOptions struct {
	listen, dir, tokenFile string
	insecure               bool
	claim                  time.Duration
	maxWall                time.Duration
	maxMemory              int64
	hooks                  map[string]api.Hook
	adminFile              string
	fourEyes, dev          bool
	models                 []string
	// enrollFile is the enrolment token's file; certLife a node
	// certificate's lifetime; temporalIP where the frontend listens.
	enrollFile, temporalIP string
	certLife               time.Duration
	// tenantsFile names the tenants' tokens; poolQuota and tenantQuota
	// are the quotas (--pool-quota, --tenant-quota).
	tenantsFile            string
	poolQuota, tenantQuota map[string]int
	// start starts the embedded Temporal server; external, when its
	// address is set, is the existing cluster used instead.
	start    jobs.StartDevServer
	external external
}

func runServer(ctx context.Context, env *cli.Env, o serverOptions) error {
	if err := checkListen(o.listen); err != nil {
		return err
	}
	token, err := serverToken(o.tokenFile)
	if err != nil {
		return err
	}
	admins, err := adminTokens(o.adminFile)
	if err != nil {
		return err
	}
	for _, a := range admins {
		if a.Token == token {
			return errs.Invalidf("admin token file %s: admin %s has the operator's token; give each role its own", o.adminFile, a.Name)
		}
	}
	log, err := audit.Open(filepath.Join(o.dir, "audit.jsonl"), audit.Options{})
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "the server's audit log")
	}
	defer log.Close()
	host, _, _ := net.SplitHostPort(o.listen)
	if ip := net.ParseIP(host); !ip.IsLoopback() && o.temporalIP == "127.0.0.1" {
		// The API on another address than loopback: its nodes reach
		// Temporal there too, with their certificates.
		o.temporalIP = host
	}
	if ip := net.ParseIP(o.temporalIP); ip == nil || ip.IsUnspecified() {
		return cli.Usagef("--temporal-listen %q: want one IP address", o.temporalIP)
	}
	fleet, err := fleetPKI(filepath.Join(o.dir, "pki"), o.temporalIP)
	if err != nil {
		return err
	}
	// The enrolment token file carries the CA's pin, so a node enrolling
	// over TLS knows the server before it sends the token.
	pin := pki.Fingerprint(fleet.ca.Cert)
	enrollToken, err := enrollTokenFile(o.enrollFile, pin)
	if err != nil {
		return err
	}
	if enrollToken == token {
		return errs.Invalidf("the enrolment token (%s) is the API token (%s): give each its own", o.enrollFile, o.tokenFile)
	}
	for _, a := range admins {
		if a.Token == enrollToken {
			return errs.Invalidf("admin token file %s: admin %s has the enrolment token; give each its own", o.adminFile, a.Name)
		}
	}
	tenants, err := serverTenants(o, token, enrollToken, admins)
	if err != nil {
		return err
	}
	quotas, err := serverQuotas(o, tenants, env.Log)
	if err != nil {
		return err
	}
	// The authorizer asks the API's node registry, made below, whether a
	// node's attested tier lets it poll a floor queue; none may before.
	var registry atomic.Pointer[api.Server]
	eligible := func(node, queue string) bool { a := registry.Load(); return a != nil && a.Eligible(node, queue) }
	standing := func(node string) (int, bool, bool) {
		if a := registry.Load(); a != nil {
			return a.Standing(node)
		}
		return 0, false, false
	}
	hostPort, namespace, c, stopTemporal, err := connectTemporal(ctx, env, o, fleet, eligible, standing)
	if err != nil {
		return err
	}
	defer stopTemporal()
	stop, err := c.OrchestrateWith(quotas)
	if err != nil {
		return err
	}
	defer stop()
	raw, err := net.Listen("tcp", o.listen)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "listen on %s", o.listen)
	}
	// Plain HTTP as well on loopback, where only this machine's processes
	// reach it, and beyond only when the operator says so.
	plain := o.insecure || net.ParseIP(host).IsLoopback()
	ln, err := apiListener(raw, fleet.ca, host, plain)
	if err != nil {
		raw.Close()
		return err
	}
	optouts, save, err := optOutFile(filepath.Join(o.dir, "optouts.json"))
	if err != nil {
		return err
	}
	store, prov, err := openServerFiles(o.dir)
	if err != nil {
		return err
	}
	defer store.Close()
	defer prov.Close()
	a := api.New(api.Config{Token: token, Admins: admins, Tenants: tenants, Quotas: quotas, Audit: log, FourEyes: o.fourEyes, Dev: o.dev, VettedModels: o.models,
		OptOuts: optouts, SaveOptOuts: save, Files: serverFiles{store}, Provenance: prov,
		Jobs: c, Temporal: hostPort, Namespace: namespace,
		ClaimTimeout: o.claim, Hooks: o.hooks, Log: env.Log, MaxWall: o.maxWall, MaxMemory: o.maxMemory,
		CA: fleet.ca, EnrollToken: enrollToken, NodeCertLifetime: o.certLife})
	registry.Store(a)
	defer a.Close()
	if o.insecure && !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(env.Stderr, "airlock server: WARNING: --insecure-listen: the API also takes plain HTTP on %s, where bearer tokens cross unencrypted\n", o.listen)
	}
	if o.dev {
		fmt.Fprintln(env.Stderr, "airlock server: --dev: every node may take floor work, UNCONFINED on a node without a sandbox; every job says so. Not for a fleet.")
	}
	hs := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stderr, "airlock server: %s (token in %s; nodes enrol with %s; Temporal on %s, mutual TLS only)\n",
		listening(ln.Addr(), plain, filepath.Join(o.dir, "pki", "ca.pem"), pin), o.tokenFile, o.enrollFile, hostPort)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-done:
		return errs.Wrap(errs.Unavailable, err, "serve")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return nil
}

// serverPKI is the fleet CA and the certificates the server issues itself
// at each start.
type serverPKI struct {
	ca *pki.CA
	// services is the Temporal frontend's (and its services') certificate;
	// client the server's own clients'.
	services, client tls.Certificate
	clientTLS        *tls.Config
}

// fleetPKI loads (or makes, on first start) the fleet CA in dir and issues
// the frontend's certificate for 127.0.0.1 and frontIP, where it listens,
// and the server's client certificate, which it also writes to dir
// (client.pem, client.key, 0600) for an operator's own Temporal tools.
func fleetPKI(dir, frontIP string) (*serverPKI, error) {
	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		return nil, err
	}
	services, err := ca.IssueTemporal([]string{"127.0.0.1", "::1", "localhost", frontIP})
	if err != nil {
		return nil, err
	}
	client, err := ca.IssueServerClient()
	if err != nil {
		return nil, err
	}
	if key, ok := client.PrivateKey.(*ecdsa.PrivateKey); ok {
		if err := pki.WriteKey(filepath.Join(dir, "client.key"), key); err != nil {
			return nil, err
		}
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: client.Certificate[0]})
	if err := pki.WriteCert(filepath.Join(dir, "client.pem"), certPEM); err != nil {
		return nil, err
	}
	clientTLS, err := pki.ClientTLS(ca.PEM, func() (*tls.Certificate, error) { return &client, nil })
	if err != nil {
		return nil, err
	}
	return &serverPKI{ca: ca, services: services, client: client, clientTLS: clientTLS}, nil
}

// hookFile is one hook as the hooks file names it.
type hookFile struct {
	Pool    string   `json:"pool"`
	Argv    []string `json:"argv"`
	Command string   `json:"command"`
	Policy  string   `json:"policy"`
	Mode    string   `json:"mode"`
}

// readHooks reads the hooks file; "" is no hooks. Each hook's policy file
// is read now, so a hook never runs under a policy edited later.
func readHooks(env *cli.Env, file string) (map[string]api.Hook, error) {
	if file == "" {
		return nil, nil
	}
	file = cli.AbsFrom(env, file)
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "--hooks")
	}
	var raw map[string]hookFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, errs.Invalidf("--hooks %s: %v", file, err)
	}
	hooks := map[string]api.Hook{}
	for name, h := range raw {
		if err := jobs.CheckName("hook", name); err != nil {
			return nil, errs.Invalidf("--hooks %s: %v", file, err)
		}
		if (len(h.Argv) == 0) == (h.Command == "") {
			return nil, errs.Invalidf("--hooks %s: hook %s: give argv or command, one of them", file, name)
		}
		out := api.Hook{Pool: h.Pool, Argv: h.Argv, Command: h.Command, Mode: h.Mode}
		if h.Policy != "" {
			p := h.Policy
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(file), p)
			}
			pb, err := os.ReadFile(p)
			if err != nil {
				return nil, errs.Wrap(errs.Invalid, err, "--hooks %s: hook %s: policy", file, name)
			}
			out.Policy = string(pb)
		}
		hooks[name] = out
	}
	return hooks, nil
}

// checkListen refuses an address that is not one IP: a loopback one, or
// one of this host's beyond it, where the API is served over TLS only
// (plain HTTP as well with --insecure-listen) — never every address,
// which would serve it on networks nobody chose.
func checkListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cli.Usagef("--listen %q: want HOST:PORT", addr)
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return cli.Usagef("--listen %q: want an IP address, not a name", addr)
	case ip.IsLoopback():
		return nil
	case ip.IsUnspecified():
		return cli.Usagef("--listen %q: name the one address to serve, not every address", addr)
	}
	return nil
}

// parseBytes reads a size: bytes, or a number with K, M or G (powers of
// 1024); "" is 0, no ceiling.
func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'K', 'k':
		mult = 1 << 10
	case 'M', 'm':
		mult = 1 << 20
	case 'G', 'g':
		mult = 1 << 30
	}
	num := s
	if mult > 1 {
		num = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, errs.Invalidf("want a positive size such as 512M or 2G")
	}
	return n * mult, nil
}

// serverToken reads the token file, creating it with a random token when
// it does not exist; through privfile, so no link steers the write.
func serverToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		t := strings.TrimSpace(string(b))
		if len(t) < 16 {
			return "", errs.Invalidf("token file %s: the token is shorter than 16 characters", path)
		}
		return t, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", errs.Wrap(errs.Unavailable, err, "token file")
	}
	var r [32]byte
	rand.Read(r[:])
	t := hex.EncodeToString(r[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "token file")
	}
	if err := privfile.WriteFile(path, []byte(t+"\n"), 0o600, privfile.Options{}); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "token file")
	}
	return t, nil
}

// adminTokens reads the admins' token file, one "NAME TOKEN" a line (a
// line of a token alone is admin "admin"), creating it with one random
// admin token when it does not exist; through privfile, so no link steers
// the write.
func adminTokens(path string) ([]api.Admin, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		var r [32]byte
		rand.Read(r[:])
		t := hex.EncodeToString(r[:])
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "admin token file")
		}
		if err := privfile.WriteFile(path, []byte("admin "+t+"\n"), 0o600, privfile.Options{}); err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "admin token file")
		}
		return []api.Admin{{Name: "admin", Token: t}}, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "admin token file")
	}
	var out []api.Admin
	seen := map[string]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		var a api.Admin
		switch len(f) {
		case 0:
			continue
		case 1:
			a = api.Admin{Name: "admin", Token: f[0]}
		case 2:
			a = api.Admin{Name: f[0], Token: f[1]}
		default:
			return nil, errs.Invalidf("admin token file %s: line %d: want NAME TOKEN", path, i+1)
		}
		if err := jobs.CheckName("admin name", a.Name); err != nil {
			return nil, errs.Invalidf("admin token file %s: line %d: %v", path, i+1, err)
		}
		if len(a.Token) < 16 {
			return nil, errs.Invalidf("admin token file %s: line %d: the token is shorter than 16 characters", path, i+1)
		}
		if seen[a.Name] || seen["token:"+a.Token] {
			return nil, errs.Invalidf("admin token file %s: line %d: a name or token given twice", path, i+1)
		}
		seen[a.Name], seen["token:"+a.Token] = true, true
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errs.Invalidf("admin token file %s: no admin", path)
	}
	return out, nil
}

// optOutFile reads the sandbox opt-outs saved in path (none when it does
// not exist) and returns how to save them, through privfile.
func optOutFile(path string) ([]api.OptOut, func([]api.OptOut) error, error) {
	var held []api.OptOut
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &held); err != nil {
			return nil, nil, errs.Invalidf("opt-out file %s: %v (fix or remove it; removing it ends every opt-out)", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, nil, errs.Wrap(errs.Unavailable, err, "opt-out file")
	}
	save := func(all []api.OptOut) error {
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return err
		}
		return privfile.WriteFile(path, append(b, '\n'), 0o600, privfile.Options{})
	}
	return held, save, nil
}

// vettedModels is the tenant's vetted models: the flag's list and the
// file's lines (# comments allowed).
func vettedModels(env *cli.Env, list, file string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(list, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	if file != "" {
		b, err := os.ReadFile(cli.AbsFrom(env, file))
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "--vetted-models-file")
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line, _, _ = strings.Cut(line, "#"); strings.TrimSpace(line) != "" {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	return out, nil
}
