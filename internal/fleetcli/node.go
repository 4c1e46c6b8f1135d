package fleetcli

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
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
	"github.com/airlock-run/airlock/node"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/sandbox"
)

// Node is `airlock node`'s run in the airlock-node binary, which links
// the Temporal SDK: it probes this host's tier, enrols and registers with
// the server, and takes its pool's jobs until ctx ends.
func Node(ctx context.Context, env *cli.Env, args []string) error {
	fs := cli.NewFlags(env, "airlock node", cli.NodeUsage, cli.NodeHelp)
	cf := addNodeFlags(fs)
	enrollFile := fs.String("enroll-token-file", "", "the server's enrolment token `file` (default: $AIRLOCK_ENROLL_TOKEN_FILE, else the local server's)")
	pool := fs.String("pool", jobs.DefaultPool, "the `pool` whose jobs this node takes")
	id := fs.String("id", "", "this node's `id` (default: the host name)")
	sb := fs.String("sandbox", "auto", "sandbox tier: auto (the best the host gives, refused at tier 0), off (tier 0) or 1")
	state := fs.String("state", "", "state `directory` (default: $XDG_STATE_HOME/airlock/node/ID)")
	maxBoxes := fs.Int("max-boxes", 4, "the most boxes this node runs at once (`N`)")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("airlock node takes no arguments (see --help)")
	}
	if *id == "" {
		*id = hostID()
	}
	if err := jobs.CheckName("--id", *id); err != nil {
		return cli.Usagef("%v", err)
	}
	if err := jobs.CheckName("--pool", *pool); err != nil {
		return cli.Usagef("%v", err)
	}
	if *maxBoxes < 1 || *maxBoxes > 1024 {
		return cli.Usagef("--max-boxes %d: want 1 to 1024", *maxBoxes)
	}
	tier, findings, err := nodeTier(*sb)
	if err != nil {
		return err
	}
	dir, err := cli.FleetDir(env, *state, filepath.Join("node", *id))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errs.Wrap(errs.Unavailable, err, "node state directory")
	}
	server := cli.ServerURL(env, *cf.server)
	if *cf.tokenFile != "" {
		fmt.Fprintf(env.Stderr, "airlock node: WARNING: --token-file is unused and not read: a node registers with its own token, from its enrolment (STATE/pki/node.token); drop the flag, it goes in the next release\n")
	}
	enrollToken, caPin, err := readEnrollFile(env, *enrollFile)
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
		Kernel: jobKernel(env, tier, store), EnrollToken: enrollToken, CAPin: caPin, Attest: attestRows(env)}
	cfg.Tree = node.NewServerTree(cfg, nodeFiles{store})
	return node.Run(ctx, cfg)
}

// nodeTier resolves --sandbox against one probe of this host: auto is the
// best it gives (refused when that is tier 0), off is tier 0.
func nodeTier(flagValue string) (sandbox.Tier, []string, error) {
	t, err := sandbox.ParseTier(flagValue)
	if err != nil {
		return 0, nil, cli.Usagef("--sandbox: %v", err)
	}
	if t == sandbox.Tier2 {
		return 0, nil, cli.Usagef("--sandbox 2: nodes do not route tier 2 yet (use auto or 1)")
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
func jobKernel(env *cli.Env, tier sandbox.Tier, store *files.Store) node.KernelFunc {
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
		// The host's caches (probe, /etc views) are the node's, shared by
		// its jobs: under a job's own HOME every job would build them anew.
		cacheDir, _ := statePaths(dir)
		k, err := wiring.Build(wiring.Config{PolicyFile: policyFile, Workdir: filepath.Join(dir, "work"), Dir: dir, CacheDir: cacheDir,
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
			airlockState, _ := cli.StateDir(env) // "" when there is none
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
func attestRows(env *cli.Env) func(ctx context.Context) ([]pki.Row, error) {
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
	if j.Taint != "" {
		return j.Taint
	}
	return "it read text from outside"
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

// nodeFlags are how the node finds the server.
type nodeFlags struct {
	server, tokenFile *string
}

// addNodeFlags are airlock node's: --server, and --token-file accepted for
// one release but never read (a node has a token of its own).
func addNodeFlags(fs *flag.FlagSet) *nodeFlags {
	return &nodeFlags{
		server:    fs.String("server", "", "the server's `URL` (default: $AIRLOCK_SERVER, else http://"+cli.DefaultServerAddr+")"),
		tokenFile: fs.String("token-file", "", "unused: a node registers with its own token, from its enrolment (accepted for one release)"),
	}
}
