package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/escape"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
	"github.com/airlock-run/airlock/node"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/sandbox"
)

func nodeCmd() *Command {
	const usage = "[--server URL] [--enroll-token-file FILE] [--pool NAME] [--id ID] [--sandbox auto|off|1] [--max-boxes N] [--state DIR]"
	const long = `Runs a node of the fleet: it probes this host's sandbox tier, registers
with the server (its tier and the probe's findings), and takes jobs of its
pool: from the pool's queue always, from the pool's floor queue (work that
can run a shell) only at sandbox tier 1, and the runs it claimed from its
own queue, heartbeating while they run.

Each job runs through a kernel built for it from the job's own policy
(never this node's): decided, confined at this node's tier and recorded in
the job's own audit log under STATE/jobs/ID. A job's box gets none of this
node's environment.

On first start the node makes its key (STATE/pki/node.key, 0600; it never
leaves the node) and enrols it with the server's enrolment token
(--enroll-token-file, else $AIRLOCK_ENROLL_TOKEN_FILE, else the local
server's STATE/enroll-token) for a certificate naming its id and pool,
renewed before it ends; it connects to Temporal with that certificate. At
tier 1 it runs the selftest's attest rows (airlock sandbox selftest
--attest) once and sends them signed with its key: the server records the
tier the rows prove, and only at an attested tier 1 may the node poll the
floor queue.

The node holds no operator's token. Its enrolment brings a token of its
own (STATE/pki/node.token, 0600; a new one at every enrolment), which only
registers this node and raises its own runs' questions: it cannot list or
answer approvals, start or kill jobs. --token-file is accepted, unused, for
one release.

--sandbox off runs tier 0 (no sandbox): such a node takes only jobs started
with --tier0, and says so when it registers.

--max-boxes N bounds the boxes this node runs at once (default 4): a node at
its bound declines further claims before any box starts, so the job waits in
its queue for a node with room.`
	return &Command{Name: "node", Usage: usage, Short: "run a node that takes jobs from the server", Long: long,
		Sub: nodeAdminCmds(),
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock node", usage, long)
			cf := addNodeFlags(fs)
			enrollFile := fs.String("enroll-token-file", "", "the server's enrolment token `file` (default: $AIRLOCK_ENROLL_TOKEN_FILE, else the local server's)")
			pool := fs.String("pool", jobs.DefaultPool, "the `pool` whose jobs this node takes")
			id := fs.String("id", "", "this node's `id` (default: the host name)")
			sb := fs.String("sandbox", "auto", "sandbox tier: auto (the best the host gives, refused at tier 0), off (tier 0) or 1")
			state := fs.String("state", "", "state `directory` (default: $XDG_STATE_HOME/airlock/node/ID)")
			maxBoxes := fs.Int("max-boxes", 4, "the most boxes this node runs at once (`N`)")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return usagef("airlock node takes no arguments (see --help)")
			}
			if *id == "" {
				*id = hostID()
			}
			if err := jobs.CheckName("--id", *id); err != nil {
				return usagef("%v", err)
			}
			if err := jobs.CheckName("--pool", *pool); err != nil {
				return usagef("%v", err)
			}
			if *maxBoxes < 1 || *maxBoxes > 1024 {
				return usagef("--max-boxes %d: want 1 to 1024", *maxBoxes)
			}
			tier, findings, err := nodeTier(*sb)
			if err != nil {
				return err
			}
			dir, err := fleetDir(env, *state, filepath.Join("node", *id))
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return errs.Wrap(errs.Unavailable, err, "node state directory")
			}
			server := cf.serverURL(env)
			if *cf.tokenFile != "" {
				fmt.Fprintf(env.Stderr, "airlock node: WARNING: --token-file is unused and not read: a node registers with its own token, from its enrolment (STATE/pki/node.token); drop the flag, it goes in the next release\n")
			}
			enrollToken, err := readTokenFile(env, *enrollFile, "AIRLOCK_ENROLL_TOKEN_FILE", "enroll-token", "the server's enrolment token (set --enroll-token-file)")
			if err != nil {
				return err
			}
			if tier == sandbox.Tier0 {
				fmt.Fprintf(env.Stderr, "airlock node: WARNING: node %s runs at sandbox tier 0 (--sandbox off): it takes only jobs started with --tier0, which run UNCONFINED\n", *id)
			}
			store, err := files.Open(filepath.Join(dir, "files"), files.Options{})
			if err != nil {
				return err
			}
			defer store.Close()
			cfg := node.Config{Server: server, ID: *id, Pool: *pool,
				Tier: int(tier), Findings: findings, StateDir: dir, Log: env.Log, MaxBoxes: *maxBoxes,
				Kernel: jobKernel(env, tier, store), EnrollToken: enrollToken, Attest: attestRows(env)}
			cfg.Tree = node.NewServerTree(cfg, nodeFiles{store})
			return node.Run(ctx, cfg)
		}}
}

// nodeTier resolves --sandbox against one probe of this host: auto is the
// best it gives (refused when that is tier 0), off is tier 0.
func nodeTier(flagValue string) (sandbox.Tier, []string, error) {
	t, err := sandbox.ParseTier(flagValue)
	if err != nil {
		return 0, nil, usagef("--sandbox: %v", err)
	}
	if t == sandbox.Tier2 {
		return 0, nil, usagef("--sandbox 2: nodes do not route tier 2 yet (use auto or 1)")
	}
	host := sandbox.ProbeHost()
	var findings []string
	for _, f := range host.Report().Findings {
		findings = append(findings, fmt.Sprintf("%s: %s: %s (fix: %s)", f.Severity, f.Topic, f.Text, f.Fix))
	}
	got, err := sandbox.Resolve(t, host)
	if err != nil {
		return 0, findings, err
	}
	if got == sandbox.Tier0 {
		findings = append(findings, "warning: sandbox: the node runs at tier 0 (--sandbox off): it takes only jobs started with --tier0")
	}
	return got, findings, nil
}

// jobKernel builds each job's kernel from the job's policy, in the job's
// directory: its own working directory, audit log and grants, HOME the
// job's directory, none of the node's environment, at the node's tier.
func jobKernel(env *Env, tier sandbox.Tier, store *files.Store) node.KernelFunc {
	return func(ctx context.Context, j jobs.Job, dir string) (node.Kernel, error) {
		policyFile := ""
		if j.Policy != "" {
			policyFile = filepath.Join(dir, "policy.yaml")
			if err := os.WriteFile(policyFile, []byte(j.Policy), 0o600); err != nil {
				return node.Kernel{}, errs.Wrap(errs.Unavailable, err, "job %s: policy", j.ID)
			}
		}
		// A short directory of the job's own for the approvals socket (a
		// Unix socket's path is short), so two jobs never share one.
		run, err := os.MkdirTemp("", "al-")
		if err != nil {
			return node.Kernel{}, errs.Wrap(errs.Unavailable, err, "job %s: runtime directory", j.ID)
		}
		getenv := func(k string) string {
			switch k {
			case "HOME":
				return dir
			case "XDG_RUNTIME_DIR":
				return run
			}
			return ""
		}
		k, err := wiring.Build(wiring.Config{PolicyFile: policyFile, Workdir: filepath.Join(dir, "work"), Dir: dir,
			Mode: j.Mode, Getenv: getenv, AuditFile: filepath.Join(dir, "audit.jsonl"),
			GrantsFile: filepath.Join(dir, "grants.json"), Log: env.Log, Tier: tier, Exe: env.Exe,
			StoreDir: store.Dir(), Offloader: &offload.Offloader{Store: store, Threshold: offload.DefaultThreshold},
			Scope: jobScope(j.ID),
			Taint: func() string { return jobTaint(j) },
			Warn:  func(s string) { env.Log.Warn("job "+j.ID, "announce", s) }})
		if err != nil {
			os.RemoveAll(run)
			return node.Kernel{}, err
		}
		// Nothing of the node's own state reaches the job's boxes or its
		// file calls (nodestate.go).
		state, ok := statePaths(dir)
		if !ok {
			err = errs.Invalidf("node: job %s: its directory is not the node's STATE/jobs/%s", j.ID, j.ID)
		} else {
			airlockState, _ := stateDir(env) // "" when there is none
			err = checkNodeState(k.Kernel.Policy(), dir, state, airlockState)
		}
		if err != nil {
			k.Close()
			os.RemoveAll(run)
			return node.Kernel{}, err
		}
		return node.Kernel{Kernel: k.Kernel, Close: func() error {
			err := k.Close()
			os.RemoveAll(run)
			return err
		}}, nil
	}
}

// attestRows runs the selftest's attest rows (pki.AttestRows, the matrix
// of `airlock sandbox selftest` limited to them) on this host, as the rows
// a node signs: each attempt unconfined first, then on every mechanism.
func attestRows(env *Env) func(ctx context.Context) ([]pki.Row, error) {
	return func(ctx context.Context) ([]pki.Row, error) {
		cases, err := escape.Parse(escape.CaseFile)
		if err != nil {
			return nil, err
		}
		rep, err := escape.Run(ctx, escape.Options{Exe: env.Exe, Cases: cases, Only: pki.AttestRows})
		if err != nil {
			return nil, err
		}
		tiers := map[string]int{}
		for _, m := range rep.Mechanisms {
			tiers[m.Name] = m.Tier
		}
		rows := make([]pki.Row, 0, len(rep.Results))
		for _, r := range rep.Results {
			rows = append(rows, pki.Row{Attempt: r.Attempt, Mechanism: r.Mechanism, Tier: tiers[r.Mechanism],
				Outcome: string(r.Outcome), Detail: r.Detail})
		}
		return rows, nil
	}
}

// jobTaint is why job j is tainted, "" when it is not: its kernel then
// makes every call that can send data out wait for a person.
func jobTaint(j jobs.Job) string {
	if !j.Tainted {
		return ""
	}
	return firstNonEmpty(j.Taint, "it read text from outside")
}

// hostID is the host name as a node id.
func hostID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "node"
	}
	h = strings.ToLower(h)
	h = regexp.MustCompile(`[^a-z0-9_-]+`).ReplaceAllString(h, "-")
	h = strings.Trim(h, "-_")
	if len(h) > 63 {
		h = h[:63]
	}
	if h == "" {
		return "node"
	}
	return h
}

// clientFlags are how a command finds the server: --server and
// --token-file, else $AIRLOCK_SERVER and $AIRLOCK_TOKEN_FILE, else the
// local server's defaults.
type clientFlags struct {
	server, tokenFile *string
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	return &clientFlags{
		server:    fs.String("server", "", "the server's `URL` (default: $AIRLOCK_SERVER, else http://"+DefaultServerAddr+")"),
		tokenFile: fs.String("token-file", "", "the server's bearer token `file` (default: $AIRLOCK_TOKEN_FILE, else the local server's)"),
	}
}

// addNodeFlags are airlock node's: --server, and --token-file accepted for
// one release but never read (a node has a token of its own).
func addNodeFlags(fs *flag.FlagSet) *clientFlags {
	return &clientFlags{
		server:    fs.String("server", "", "the server's `URL` (default: $AIRLOCK_SERVER, else http://"+DefaultServerAddr+")"),
		tokenFile: fs.String("token-file", "", "unused: a node registers with its own token, from its enrolment (accepted for one release)"),
	}
}

// serverURL is --server, else $AIRLOCK_SERVER, else the local server.
func (c *clientFlags) serverURL(env *Env) string {
	return firstNonEmpty(*c.server, env.Getenv("AIRLOCK_SERVER"), "http://"+DefaultServerAddr)
}

func (c *clientFlags) resolve(env *Env) (server, token string, err error) {
	server = c.serverURL(env)
	token, err = readTokenFile(env, *c.tokenFile, "AIRLOCK_TOKEN_FILE", "token", "the server's token (set --token-file)")
	return server, token, err
}

// readTokenFile reads a token: the flag's file, else $envVar's, else the
// local server's STATE/name.
func readTokenFile(env *Env, flagValue, envVar, name, what string) (string, error) {
	file := firstNonEmpty(flagValue, env.Getenv(envVar))
	if file == "" {
		dir, err := fleetDir(env, "", "server")
		if err != nil {
			return "", err
		}
		file = filepath.Join(dir, name)
	}
	b, err := os.ReadFile(absFrom(env, file))
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "%s", what)
	}
	return tokenOf(string(b)), nil
}

// tokenOf is the token a token file holds: the file's one token, or the
// token of its first "NAME TOKEN" line (an admin's file).
func tokenOf(file string) string {
	for _, line := range strings.Split(file, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			return f[len(f)-1]
		}
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
