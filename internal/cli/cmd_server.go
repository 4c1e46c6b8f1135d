package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/jobs"
)

// DefaultServerAddr is where `airlock server` listens and clients look.
const DefaultServerAddr = "127.0.0.1:8420"

func serverCmd() *Command {
	const usage = "[--listen ADDR [--insecure-listen]] [--state DIR] [--token-file FILE] [--claim-timeout D] [--max-wall D] [--max-memory SIZE] [--hooks FILE]"
	const long = `Runs the fleet's server: an embedded Temporal dev server (persisted to a
SQLite file under the state directory, listening on loopback only) and the
HTTP JSON API on loopback behind a bearer token (read from --token-file,
created with a random token when missing):

  POST /v1/jobs, GET /v1/jobs, GET /v1/jobs/{id}, POST /v1/jobs/{id}/kill
  POST /v1/nodes, GET /v1/nodes
  POST /v1/hooks/NAME   an outside event: starts hook NAME's job with the
                        body as its input, tainted, on a tier-1 node only

--hooks FILE names the hooks, as JSON:
  {"deploy": {"pool": "ci", "argv": ["./deploy.sh"], "policy": "deploy.yaml"}}
(policy is a file, read when the server starts, relative to FILE).

The server routes jobs and never runs one: every call of a job is decided
and run on the node that claimed it, at that node's sandbox tier. Every
job can run a shell, so it waits on its pool's floor queue for a node with
sandbox tier 1 unless it was started with --tier0; one that no eligible node
claims within --claim-timeout fails with the reason and the fix.

--max-wall D and --max-memory SIZE (bytes, or with K, M or G) are ceilings
every job gets: the node narrows the job's policy to them, so a job's own
policy cannot raise them.

Nodes reach Temporal at the API's host on a port kept in STATE/temporal.port
(chosen on first start), so a restarted server is found where it was and
its running jobs resume. --listen takes a loopback address only, unless
--insecure-listen is given: that serves the API and Temporal to anyone who
reaches the address, with no authentication of nodes (any client may poll
any queue), for a network of the operator's own such as a test's network
namespaces.

The Temporal server is linked only into the airlock-server binary, which is
this command; the airlock binary stays small and only says where it is.`
	return &Command{Name: "server", Usage: usage, Short: "run the fleet's server (embedded Temporal, HTTP API)", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock server", usage, long)
			listen := fs.String("listen", DefaultServerAddr, "loopback `address` of the HTTP API")
			state := fs.String("state", "", "state `directory` (default: $XDG_STATE_HOME/airlock/server)")
			tokenFile := fs.String("token-file", "", "bearer token `file` (default: STATE/token)")
			claim := fs.Duration("claim-timeout", jobs.DefaultClaimTimeout, "how long a job waits for an eligible node")
			hooksFile := fs.String("hooks", "", "the hooks `file` (JSON; see above)")
			maxWall := fs.Duration("max-wall", 0, "the most wall-clock time any job's box may run (0: the policy's)")
			maxMem := fs.String("max-memory", "", "the most memory any job's box may use, as `SIZE` (512M, 2G; default: the policy's)")
			insecure := fs.Bool("insecure-listen", false, "allow a non-loopback --listen address with no node authentication (see above)")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return usagef("airlock server takes no arguments (see --help)")
			}
			if *claim <= 0 {
				return usagef("--claim-timeout %s: want a positive duration", *claim)
			}
			if *maxWall < 0 {
				return usagef("--max-wall %s: want a positive duration", *maxWall)
			}
			mem, err := parseBytes(*maxMem)
			if err != nil {
				return usagef("--max-memory %q: %v", *maxMem, err)
			}
			if env.DevServer == nil {
				return errs.Unavailablef("the Temporal server is linked only into airlock-server: run `airlock-server %s` instead", strings.Join(args, " "))
			}
			dir, err := fleetDir(env, *state, "server")
			if err != nil {
				return err
			}
			if *tokenFile == "" {
				*tokenFile = filepath.Join(dir, "token")
			}
			hooks, err := readHooks(env, *hooksFile)
			if err != nil {
				return err
			}
			return runServer(ctx, env, serverOptions{listen: *listen, insecure: *insecure, dir: dir, tokenFile: absFrom(env, *tokenFile), claim: *claim, hooks: hooks, maxWall: *maxWall, maxMemory: mem})
		}}
}

type serverOptions struct {
	listen, dir, tokenFile string
	insecure               bool
	claim                  time.Duration
	maxWall                time.Duration
	maxMemory              int64
	hooks                  map[string]api.Hook
}

func runServer(ctx context.Context, env *Env, o serverOptions) error {
	if err := checkListen(o.listen, o.insecure); err != nil {
		return err
	}
	token, err := serverToken(o.tokenFile)
	if err != nil {
		return err
	}
	dev, err := env.DevServer(ctx, jobs.DevConfig{Dir: filepath.Join(o.dir, "temporal")})
	if err != nil {
		return err
	}
	defer dev.Stop()
	c, err := jobs.Dial(dev.HostPort(), dev.Namespace(), env.Log)
	if err != nil {
		return err
	}
	defer c.Close()
	stop, err := c.Orchestrate()
	if err != nil {
		return err
	}
	defer stop()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "listen on %s", o.listen)
	}
	host, _, _ := net.SplitHostPort(o.listen)
	front, err := serveTemporal(ctx, o.dir, host, dev.HostPort())
	if err != nil {
		ln.Close()
		return err
	}
	defer front.Close()
	if o.insecure {
		fmt.Fprintf(env.Stderr, "airlock server: WARNING: --insecure-listen: the API and Temporal on %s authenticate no node: anything that reaches it can poll any queue\n", host)
	}
	a := api.New(api.Config{Token: token, Jobs: c, Temporal: front.Addr().String(), Namespace: dev.Namespace(),
		ClaimTimeout: o.claim, Hooks: o.hooks, Log: env.Log, MaxWall: o.maxWall, MaxMemory: o.maxMemory})
	hs := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stderr, "airlock server: listening on http://%s (token in %s; Temporal on %s)\n", ln.Addr(), o.tokenFile, front.Addr())
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
func readHooks(env *Env, file string) (map[string]api.Hook, error) {
	if file == "" {
		return nil, nil
	}
	file = absFrom(env, file)
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

// checkListen refuses an address that is not a loopback IP: the API and
// the Temporal frontend behind it are for this machine only, unless
// insecure, when it must still be one IP of this host's (never every
// address, which would serve them on networks nobody chose).
func checkListen(addr string, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: want HOST:PORT", addr)
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return usagef("--listen %q: want an IP address, not a name", addr)
	case ip.IsLoopback():
		return nil
	case !insecure:
		return usagef("--listen %q: the server listens on a loopback address only (127.0.0.1 or ::1); --insecure-listen serves a network of your own with no node authentication", addr)
	case ip.IsUnspecified():
		return usagef("--listen %q: name the one address to serve, not every address", addr)
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

// temporalPortFile keeps the port nodes reach Temporal at, so a restarted
// server is found where it was.
const temporalPortFile = "temporal.port"

// serveTemporal forwards host:PORT to the embedded frontend, PORT the one
// the state directory keeps (a free one on first start, then kept). The
// dev server picks fresh loopback ports each start; nodes dialled the
// forwarder's, which stays.
func serveTemporal(ctx context.Context, dir, host, backend string) (net.Listener, error) {
	file := filepath.Join(dir, temporalPortFile)
	port := "0"
	if b, err := os.ReadFile(file); err == nil {
		port = strings.TrimSpace(string(b))
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return nil, errs.Invalidf("%s: %q is not a port (remove the file to pick a new one)", file, port)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "Temporal for nodes on %s port %s (kept in %s)", host, port, file)
	}
	if port == "0" {
		p := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		if err := privfile.WriteFile(file, []byte(p+"\n"), 0o600, privfile.Options{}); err != nil {
			ln.Close()
			return nil, errs.Wrap(errs.Unavailable, err, "keep the Temporal port")
		}
	}
	go forward(ctx, ln, backend)
	return ln, nil
}

// forward copies each connection ln accepts to and from backend until ln
// closes.
func forward(ctx context.Context, ln net.Listener, backend string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			b, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", backend)
			if err != nil {
				return
			}
			defer b.Close()
			done := make(chan struct{}, 2)
			go func() { io.Copy(b, c); done <- struct{}{} }()
			go func() { io.Copy(c, b); done <- struct{}{} }()
			select {
			case <-done:
			case <-ctx.Done():
			}
		}()
	}
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

// fleetDir is a fleet command's state directory: the flag, else
// <airlock's state directory>/<name> ($XDG_STATE_HOME/airlock/<name>, else
// ~/.local/state/airlock/<name>).
func fleetDir(env *Env, flagValue, name string) (string, error) {
	if flagValue != "" {
		return absFrom(env, flagValue), nil
	}
	d, err := stateDir(env)
	if err != nil {
		return "", errs.Unavailablef("no state directory (set --state, $XDG_STATE_HOME or $HOME)")
	}
	return filepath.Join(d, name), nil
}
