// Package node is the fleet's worker: a front end of the kernel that
// translates the jobs a server routes to it into calls of a mediator
// kernel built for each job from the job's own policy, and their outcomes
// back into job results. It registers with the server (its tier and the
// probe's findings), polls its pool's queues through jobs, and heartbeats.
// It never builds a box or runs a process itself. Only internal/fleetcli
// imports it: the CLI probes the tier and supplies the kernel factory.
package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
)

// Kernel is a kernel built for one job, with what closes it.
type Kernel struct {
	*mediator.Kernel
	Close func() error
}

// KernelFunc builds the kernel that runs job j in dir, its job directory
// (work/ is the working directory inside it): from the job's policy, never
// the node's, at the node's tier.
type KernelFunc func(ctx context.Context, j jobs.Job, dir string) (Kernel, error)

// Config is a node's configuration.
type Config struct {
	// Server is the server's base URL. The node holds no operator's
	// token: it registers and raises its runs' questions with its own,
	// which its enrolment brings (see identity).
	Server   string
	ID, Pool string
	// Tier is the sandbox tier the node runs at (the CLI resolved it
	// against the host probe); Findings are the probe's findings, as
	// lines, for the server's list of nodes.
	Tier     int
	Findings []string
	// StateDir holds the node's job directories.
	StateDir string
	Kernel   KernelFunc
	// MaxBoxes bounds the boxes the node runs at once (0 is the jobs
	// package's default); a job over it waits in its queue.
	MaxBoxes int
	// Beat is the interval of registration heartbeats; 0 is 5 s.
	Beat time.Duration
	Log  *slog.Logger
	HTTP *http.Client
	// EnrollToken is the server's enrolment token: the node enrols its
	// key for a certificate (kept under StateDir/pki, renewed before it
	// ends), connects to Temporal with it, and signs its attestation. ""
	// is a node of a server without enrolment (no TLS to Temporal), which
	// `airlock server` refuses.
	EnrollToken string
	// Tree moves a job's results and files between the node and the
	// server's store; nil: no server store (results stay in the job's
	// directory).
	Tree Tree
	// CAPin is the fleet CA's "sha256:HEX" from the enrolment token
	// file: an https:// server is trusted by it until the node holds the
	// CA, and an enrolment's CA must have it ("" is an old file).
	CAPin string
	// Attest runs the selftest's attest rows (pki.AttestRows) on this
	// host, once at start, for a node that claims tier 1 or more; nil
	// reports none, which proves tier 0 only.
	Attest func(ctx context.Context) ([]pki.Row, error)
}

// Tree moves a job's results and files between the node's local store and
// the server's, which scopes them to the job's tree. nil: no server store
// (results stay in the job's directory).
type Tree interface {
	// Fetch makes ref (a files.Ref string) readable by job j's kernel
	// before a call names it (read_result, a file handed to a tool); taint
	// is non-empty when the ref came from a tainted job: the kernel is then
	// marked tainted (k.ReadOutside(taint)).
	Fetch(ctx context.Context, j jobs.Job, ref string) (taint string, err error)
	// Keep hands the refs a call of job j produced (offloaded results) to
	// the server.
	Keep(ctx context.Context, j jobs.Job, refs []string) error
}

// Registration is what a node tells the server about itself.
type Registration struct {
	ID       string   `json:"id"`
	Pool     string   `json:"pool"`
	Tier     int      `json:"tier"`
	Findings []string `json:"findings,omitempty"`
	Queues   []string `json:"queues"`
	// Attestation is the signed report of the node's tier and rows.
	Attestation *pki.Attestation `json:"attestation,omitempty"`
}

// Registered is the server's answer: where the Temporal frontend is, and
// what the node may take.
type Registered struct {
	Temporal  string `json:"temporal"`
	Namespace string `json:"namespace"`
	// OptedOut says an admin's sandbox opt-out holds for the node; Floor
	// says it may take floor work below tier 1 (an opt-out, or --dev).
	OptedOut bool `json:"opted_out,omitempty"`
	Floor    bool `json:"floor,omitempty"`
}

// Run registers the node, polls its queues and heartbeats until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Beat <= 0 {
		cfg.Beat = 5 * time.Second
	}
	if cfg.Kernel == nil {
		return errs.Invalidf("node %s: no kernel", cfg.ID)
	}
	// Before taking work: what a previous node process on this state
	// directory left running when it died goes first.
	if _, err := reapLost(cfg.StateDir, cfg.Log); err != nil {
		return err
	}
	nc := jobs.NodeConfig{ID: cfg.ID, Pool: cfg.Pool, Tier: cfg.Tier, Log: cfg.Log, Concurrency: cfg.MaxBoxes}
	reg := Registration{ID: cfg.ID, Pool: cfg.Pool, Tier: cfg.Tier, Findings: cfg.Findings, Queues: nc.Queues()}
	att, err := startAttesting(ctx, cfg)
	if err != nil {
		return err
	}
	at, err := att.register(ctx, cfg, reg)
	if err != nil {
		return err
	}
	nc.HostPort, nc.Namespace = at.Temporal, at.Namespace
	if att.id != nil {
		if nc.TLS, err = att.id.tlsConfig(); err != nil {
			return err
		}
	}
	nc.Waiters = &jobs.Waiters{}
	rn := &runner{cfg: cfg, waiters: nc.Waiters, token: att.token}
	nc.Runner = rn
	n, err := jobs.StartNode(nc)
	if err != nil {
		return err
	}
	// Stopped first, then every kernel still held is closed: no box of
	// a job outlives the node process.
	defer rn.closeAll()
	defer n.Stop()
	setFloor(cfg, n, at)
	cfg.Log.Info("node polling", "id", cfg.ID, "tier", cfg.Tier, "queues", strings.Join(reg.Queues, " "))
	t := time.NewTicker(cfg.Beat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			at, err := att.register(ctx, cfg, reg)
			if err != nil {
				if ctx.Err() == nil {
					cfg.Log.Warn("node heartbeat", "err", err)
				}
				continue
			}
			setFloor(cfg, n, at)
		}
	}
}

// attesting is the node's enrolled identity and the rows it attests; id
// is nil on a server without enrolment.
type attesting struct {
	id   *identity
	rows []pki.Row
}

// startAttesting enrols (or loads the certificate) and runs the attest
// rows once, for a node that claims a tier it must prove.
func startAttesting(ctx context.Context, cfg Config) (*attesting, error) {
	if cfg.EnrollToken == "" {
		return &attesting{}, nil
	}
	id, err := loadIdentity(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a := &attesting{id: id}
	if cfg.Tier >= 1 && cfg.Attest != nil {
		if a.rows, err = cfg.Attest(ctx); err != nil {
			// Reported, not fatal: the server records the tier the rows
			// prove (none) and says why.
			cfg.Log.Warn("node attestation: the selftest rows did not run", "err", err)
		}
	}
	return a, nil
}

// signed is reg with a fresh signed attestation, renewing the certificate
// first when it is due. A failure is logged: the registration then goes
// without one and the server says what is wrong.
func (a *attesting) signed(ctx context.Context, cfg Config, reg Registration) Registration {
	if a.id == nil {
		return reg
	}
	if a.id.due(time.Now()) {
		if err := a.id.enrol(ctx, cfg); err != nil {
			cfg.Log.Warn("node: renew the certificate", "err", err)
		}
	}
	att, err := a.id.sign(ctx, cfg, a.rows)
	if err != nil {
		cfg.Log.Warn("node: sign the attestation", "err", err)
		return reg
	}
	reg.Attestation = att
	return reg
}

// token is the node's own API token ("" on a server without enrolment).
func (a *attesting) token() string {
	if a.id == nil {
		return ""
	}
	return a.id.apiToken()
}

// register posts reg, signed, with the node's own token. A token the
// server does not know (it was rotated by an enrolment whose answer this
// node did not keep) is replaced by enrolling again, once.
func (a *attesting) register(ctx context.Context, cfg Config, reg Registration) (Registered, error) {
	at, err := register(ctx, cfg, a.token(), a.signed(ctx, cfg, reg))
	if a.id == nil || !errors.Is(err, errUnknownToken) {
		return at, err
	}
	if eerr := a.id.enrol(ctx, cfg); eerr != nil {
		return Registered{}, errors.Join(err, eerr)
	}
	return register(ctx, cfg, a.token(), a.signed(ctx, cfg, reg))
}

// setFloor applies what the server said the node may take: an opt-out
// (the node then declines tainted work) and floor work below tier 1.
func setFloor(cfg Config, n *jobs.Node, at Registered) {
	if err := n.SetFloor(at.OptedOut, at.Floor); err != nil {
		cfg.Log.Warn("node floor queue", "err", err)
	}
}

// register posts the registration (also the heartbeat) to the server.
func register(ctx context.Context, cfg Config, token string, reg Registration) (Registered, error) {
	body, _ := json.Marshal(reg)
	var at Registered
	if err := post(ctx, cfg, "/v1/nodes", token, body, &at); err != nil {
		return Registered{}, err
	}
	if at.Temporal == "" {
		return Registered{}, errs.Unavailablef("node: register with %s: an answer without the Temporal address", cfg.Server)
	}
	return at, nil
}

// runner runs a claimed job through a kernel of its own, which it keeps
// open for the job's life (its lease): one kernel per running job, by job
// id, built by Open, used by each Call, torn down by Close (or at the
// node's stop).
type runner struct {
	cfg     Config
	waiters *jobs.Waiters
	// token is the node's own API token, for its runs' questions.
	token func() string
	mu    sync.Mutex // serialises creating job directories

	lmu    sync.Mutex
	leases map[string]*leased
}

// leased is a job's kernel held on the node between its calls.
type leased struct {
	j   jobs.Job
	dir string
	k   Kernel
	// mu runs the job's calls one at a time, and Close after the last.
	mu     sync.Mutex
	closed bool
	// mcp are the job's MCP servers started so far (nil: none).
	mcp *mcpServers
	// taint is why the job's kernel was tainted since it was opened (a
	// call's taint from the server, a fetch of a tainted job's result).
	taint string
}

var _ jobs.CallRunner = (*runner)(nil)

// Run runs a job of the shape before calls (one command, one activity)
// as a lease of one call.
func (r *runner) Run(ctx context.Context, req jobs.RunRequest) (jobs.Result, error) {
	if _, err := r.Open(ctx, jobs.LeaseRequest{Job: req.Job, Node: req.Node}); err != nil {
		return jobs.Result{}, err
	}
	defer r.Close(context.WithoutCancel(ctx), req.Job.ID)
	calls := req.Job.JobCalls()
	if len(calls) == 0 {
		return jobs.Result{}, errs.Invalidf("job %s: no command", req.Job.ID)
	}
	c, err := r.Call(ctx, jobs.CallRequest{Job: req.Job, Node: req.Node, Call: calls[0]})
	return jobs.Result{Tier: c.Tier, ExitCode: c.ExitCode, Stdout: c.Stdout, Stderr: c.Stderr, Truncated: c.Truncated,
		Refused: c.Refused, Verdict: c.Verdict, Decider: c.Decider, Reason: c.Reason}, err
}

// Open builds job j's directory and kernel, marked running before any box
// starts (a node that dies while it is held leaves the mark, and its next
// start reaps what the job left). The handle is the job's id alone.
func (r *runner) Open(ctx context.Context, req jobs.LeaseRequest) (jobs.Lease, error) {
	l, err := r.open(ctx, req)
	return l, r.hostPaths(req.Job.ID).err(r.logged(req.Job.ID, err))
}

func (r *runner) open(ctx context.Context, req jobs.LeaseRequest) (jobs.Lease, error) {
	j := req.Job
	if err := j.Validate(); err != nil {
		return jobs.Lease{}, err
	}
	dir, err := r.jobDir(j.ID)
	if err != nil {
		return jobs.Lease{}, err
	}
	if err := markRunning(dir); err != nil {
		return jobs.Lease{}, err
	}
	k, err := r.cfg.Kernel(ctx, j, dir)
	if err != nil {
		unmarkRunning(dir)
		return jobs.Lease{}, err
	}
	r.lmu.Lock()
	defer r.lmu.Unlock()
	if r.leases == nil {
		r.leases = map[string]*leased{}
	}
	if _, ok := r.leases[j.ID]; ok { // jobDir refuses a second, but be sure
		k.Close()
		return jobs.Lease{}, errs.Invalidf("node %s: job %s is open already", r.cfg.ID, j.ID)
	}
	r.leases[j.ID] = &leased{j: j, dir: dir, k: k}
	return jobs.Lease{Job: j.ID, Node: r.cfg.ID, Tier: r.cfg.Tier}, nil
}

// Close tears job's kernel down once its running call ended (every box
// gone), then clears the job's running mark. A job not open is a no-op.
func (r *runner) Close(ctx context.Context, job string) error {
	r.lmu.Lock()
	l := r.leases[job]
	delete(r.leases, job)
	r.lmu.Unlock()
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.closeServers() // their boxes gone before the kernel closes
	err := l.k.Close()
	unmarkRunning(l.dir)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "node: job %s: close its kernel", job)
	}
	return nil
}

// closeAll closes every job's kernel still open: the node is stopping.
func (r *runner) closeAll() {
	r.lmu.Lock()
	ids := make([]string, 0, len(r.leases))
	for id := range r.leases {
		ids = append(ids, id)
	}
	r.lmu.Unlock()
	for _, id := range ids {
		if err := r.Close(context.Background(), id); err != nil {
			r.cfg.Log.Warn("node stop", "err", err)
		}
	}
}

// Call decides and runs one call of a leased job in the job's kernel:
// exec and shell through k.Exec, the file calls through k.File, read_result
// through k.ReadResult, each held to the server's ceilings and answered by
// a person through the server when it escalates, and a tool call through
// the job's MCP server (see tool). Before a call that names
// a ref the ref is fetched into the job's tree (and a tainted one taints
// the kernel); after one that offloaded results, they are kept there.
func (r *runner) Call(ctx context.Context, req jobs.CallRequest) (jobs.CallResult, error) {
	out, err := r.call(ctx, req)
	hp := r.hostPaths(req.Job.ID)
	out.Reason = hp.Replace(out.Reason)
	if out.ExitCode != 0 && fileCall(out.Kind) {
		out.Text = hp.Replace(out.Text) // the file program's failure, not a file's content
	}
	return out, hp.err(r.logged(req.Job.ID, err))
}

// fileCall says whether kind is run by a file program, whose failure is
// the node's message rather than a command's output.
func fileCall(kind string) bool { _, ok := fileKinds[kind]; return ok || kind == jobs.CallReadResult }

// hostPaths rewrites the node's paths in what it says of job's calls as
// the job knows them: its working directory ".", its job directory "~"
// (its policy's home), and the rest of the node's state directory
// "<node state>", each in every spelling (a symlink resolved). A
// command's own output is left as it is.
type hostPaths struct{ *strings.Replacer }

func (r *runner) hostPaths(job string) hostPaths {
	state := filepath.Clean(r.cfg.StateDir)
	dir := filepath.Join(state, "jobs", job)
	var pairs []string
	for _, p := range [][2]string{{filepath.Join(dir, "work"), "."}, {dir, "~"}, {state, "<node state>"}} {
		if res, err := filepath.EvalSymlinks(filepath.Dir(p[0])); err == nil {
			if full := filepath.Join(res, filepath.Base(p[0])); full != p[0] {
				pairs = append(pairs, full, p[1])
			}
		}
		pairs = append(pairs, p[0], p[1])
	}
	return hostPaths{strings.NewReplacer(pairs...)}
}

// err is what the job's workflow is told of err: its message alone (the
// SDK would hand on err.Error(), whose causes name the node's files and
// system calls), rewritten, in its class. A cancellation stays as it is,
// for the SDK to read as one.
func (hp hostPaths) err(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return errs.New(errs.ClassOf(err), "%s", hp.Replace(errs.AgentMessage(err)))
}

// logged logs err whole (causes and all) for the node's operator.
func (r *runner) logged(job string, err error) error {
	if err != nil && r.cfg.Log != nil {
		r.cfg.Log.Warn("node: job "+job, "err", err)
	}
	return err
}

func (r *runner) call(ctx context.Context, req jobs.CallRequest) (jobs.CallResult, error) {
	if err := req.Call.Validate(); err != nil {
		return jobs.CallResult{}, err
	}
	r.lmu.Lock()
	l := r.leases[req.Job.ID]
	r.lmu.Unlock()
	if l == nil {
		return jobs.CallResult{}, errs.NotFoundf("node %s: job %s holds no kernel here (it was closed, or the node restarted)", r.cfg.ID, req.Job.ID)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return jobs.CallResult{}, errs.NotFoundf("node %s: job %s's kernel was closed", r.cfg.ID, req.Job.ID)
	}
	// The job is the one the lease was opened for, never one a call
	// request carries: its policy and ceilings decide.
	j, k, c := l.j, l.k, req.Call
	out := jobs.CallResult{Call: c.ID, Kind: c.Kind, Node: r.cfg.ID, Tier: r.cfg.Tier}
	// The floor holds inside the node too: a job's policy that asks for
	// no isolation would run it at tier 0 on this tier-1 node.
	if j.Floor() >= 1 && k.Policy().Isolation == "none" {
		out.Refused, out.ExitCode, out.Verdict, out.Decider = true, errs.ExitRefused, "deny", "node"
		out.Reason = fmt.Sprintf("job %s needs sandbox tier 1 and its policy says isolation: none; remove it, or start the job from inside with --tier0", j.ID)
		return out, nil
	}
	// What the server knows the job read since its start taints the
	// kernel before the call runs: its kernel was built with its start's
	// taint only.
	if c.Taint != "" {
		k.ReadOutside(c.Taint)
		out.Taint = c.Taint
		l.tainted(c.Taint)
	}
	if refused := r.unconfinedTaint(l, c, &out); refused {
		return out, nil
	}
	if c.Ref != "" && r.cfg.Tree != nil {
		taint, err := r.cfg.Tree.Fetch(ctx, j, c.Ref)
		if err != nil {
			return out, err
		}
		if taint != "" {
			k.ReadOutside(taint)
			if out.Taint != "" {
				out.Taint += "; "
			}
			out.Taint += taint
			l.tainted(taint)
		}
	}
	// A person answers the job's escalations through the server: the
	// question goes to the job's workflow, the answer comes back on this
	// node's queue.
	ctx = mediator.WithApprover(ctx, &serverApprover{cfg: r.cfg, token: r.token, job: j.ID, waiters: r.waiters})
	var err error
	switch c.Kind {
	case jobs.CallExec, jobs.CallShell:
		err = r.exec(ctx, j, k, c, &out)
	case jobs.CallTool:
		err = r.tool(ctx, l, c, &out)
	default:
		err = r.file(ctx, j, k, c, &out)
	}
	var d *errs.Denial
	if errors.As(err, &d) {
		out.Tier, out.Refused, out.ExitCode, out.Reason = r.cfg.Tier, true, errs.ExitRefused, d.Error()
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if len(out.Refs) > 0 && r.cfg.Tree != nil {
		if err := r.cfg.Tree.Keep(ctx, j, out.Refs); err != nil {
			return out, err
		}
	}
	return out, nil
}

// tainted notes why the job's kernel was tainted.
func (l *leased) tainted(why string) {
	if !strings.Contains(l.taint, why) {
		l.taint = strings.TrimPrefix(l.taint+"; "+why, "; ")
	}
}

// unconfinedTaint refuses a command of a tainted job that would run
// unconfined (a tier-0 node, or a policy of isolation: none): without a
// box a command reaches the network past the egress proxy, so the taint's
// rule that every send waits for a person cannot hold. A tainted job's
// commands (its MCP servers' too: a tool call runs one) run at tier 1
// only; its file calls send nothing out.
func (r *runner) unconfinedTaint(l *leased, c jobs.Call, out *jobs.CallResult) bool {
	why := l.taint
	if l.j.Tainted {
		why = strings.TrimPrefix(firstNonEmpty(l.j.Taint, "tainted at its start")+"; "+why, "; ")
	}
	runs := c.Kind == jobs.CallExec || c.Kind == jobs.CallShell || c.Kind == jobs.CallTool
	// --dev lets floor work run unconfined on purpose (a developer's own
	// machine), as the workflow's floor check does.
	if why == "" || !runs || l.j.Dev || (r.cfg.Tier >= 1 && l.k.Policy().Isolation != "none") {
		return false
	}
	out.Refused, out.ExitCode, out.Verdict, out.Decider = true, errs.ExitRefused, "deny", "node"
	out.Reason = fmt.Sprintf("job %s is tainted (%s) and node %s would run its command unconfined: a tainted job's commands run at sandbox tier 1 only; start the work again as a job without --tier0 and without isolation: none", l.j.ID, strings.TrimSuffix(why, "; "), r.cfg.ID)
	return true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// narrowed is the job's policy held to the server's ceilings, as a call's
// narrowing (nil when the server sets none): the kernel decides and boxes
// the call under the intersection, which only ever restricts, so no
// policy a job carries raises them.
func narrowed(j jobs.Job, k Kernel) *policy.Policy {
	if j.MaxWall <= 0 && j.MaxMemory <= 0 {
		return nil
	}
	n := *k.Policy() // a copy: the kernel's own stays as it is
	holdTo(&n.Limits.Wall, j.MaxWall)
	holdTo(&n.Limits.Memory, j.MaxMemory)
	return &n
}

// exec runs an exec or shell call, its streams capped.
func (r *runner) exec(ctx context.Context, j jobs.Job, k Kernel, c jobs.Call, out *jobs.CallResult) error {
	call := mediator.Call{Kind: mediator.KindExec, Argv: c.Argv, Tool: "job", Narrow: narrowed(j, k)}
	if c.Kind == jobs.CallShell {
		call = mediator.Call{Kind: mediator.KindShell, Command: c.Command, Tool: "job", Narrow: call.Narrow}
	}
	var stdout, stderr capped
	stdout.n, stderr.n = jobs.OutputCap, jobs.OutputCap
	res, err := k.Exec(ctx, call, mediator.ExecOptions{Stdin: strings.NewReader(c.Stdin), Stdout: &stdout, Stderr: &stderr})
	decided(out, res.Outcome)
	out.Tier, out.Stdout, out.Stderr = res.Description.Tier, stdout.String(), stderr.String()
	out.Truncated = stdout.cut || stderr.cut || res.Truncated
	if err != nil {
		return err
	}
	out.ExitCode = res.ExitCode
	if out.Stdout, err = r.keep(ctx, k, c.Kind, out.Stdout, "", out); err != nil {
		return err
	}
	return nil
}

// fileKinds are the kernel's kinds of the file calls.
var fileKinds = map[string]mediator.Kind{jobs.CallReadFile: mediator.KindRead, jobs.CallWriteFile: mediator.KindWrite, jobs.CallList: mediator.KindList}

// file runs a file or read_result call; a file program that failed is
// exit code 1 with why in Text.
func (r *runner) file(ctx context.Context, j jobs.Job, k Kernel, c jobs.Call, out *jobs.CallResult) error {
	if c.Kind == jobs.CallReadResult {
		args := map[string]any{"ref": c.Ref}
		for name, v := range map[string]string{"view": c.View, "range": c.Range, "query": c.Query} {
			if v != "" {
				args[name] = v
			}
		}
		if c.Budget > 0 {
			args["budget"] = float64(c.Budget)
		}
		res, err := k.ReadResult(ctx, mediator.Call{Kind: mediator.KindReadResult, Args: args, Narrow: narrowed(j, k)})
		if err != nil {
			return err
		}
		out.Verdict, out.Decider, out.Text = "allow", "policy", res.Text
		return nil
	}
	call := mediator.Call{Kind: fileKinds[c.Kind], Path: c.Path, Tool: c.Kind, Narrow: narrowed(j, k)}
	if c.Kind == jobs.CallWriteFile {
		content := c.Content
		call.Content = &content
	}
	res, err := k.File(ctx, call)
	decided(out, res.Outcome)
	if err != nil {
		return err
	}
	if res.Failed {
		out.ExitCode = 1
	}
	if k.Policy().Isolation == "none" {
		// The file program ran unconfined, as the job's policy asked.
		out.Tier = 0
	}
	out.Text, err = r.keep(ctx, k, c.Kind, res.Text, res.Path, out)
	return err
}

// decided copies a call's decision into its result.
func decided(out *jobs.CallResult, o mediator.Outcome) {
	out.Verdict, out.Decider = o.Decision.Verdict.String(), o.Decider
	out.Rule, out.Reason = o.Decision.Rule, o.Decision.Reason
}

// keep offloads a call's text when the kernel keeps results and the text
// is too heavy to show, noting the ref; the stub takes its place.
func (r *runner) keep(ctx context.Context, k Kernel, tool, text, name string, out *jobs.CallResult) (string, error) {
	if !k.KeepsResults() || text == "" {
		return text, nil
	}
	f, err := k.Fit(ctx, mediator.FitRequest{Tool: tool, Text: text, Name: name})
	if err != nil {
		return text, err
	}
	if f.Offloaded != nil {
		out.Refs = append(out.Refs, f.Offloaded.Ref)
	}
	return f.Text, nil
}

// holdTo lowers a limit to the server's ceiling (0: none); a limit of 0
// (none) under a ceiling becomes the ceiling.
func holdTo[T ~int64](limit *T, ceiling T) {
	if ceiling > 0 && (*limit <= 0 || *limit > ceiling) {
		*limit = ceiling
	}
}

// jobDir creates the job's directory and its empty working directory; a
// job id already run on this node is refused, so no job reads another's
// leftovers.
func (r *runner) jobDir(id string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	dir := filepath.Join(r.cfg.StateDir, "jobs", id)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "node: job directory")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "node: job %s: directory", id)
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o700); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "node: job %s: working directory", id)
	}
	return dir, nil
}

// capped keeps the first n bytes written and notes the rest was cut.
type capped struct {
	bytes.Buffer
	n   int
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.Len(); room < len(p) {
		c.cut = true
		if room > 0 {
			c.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return c.Buffer.Write(p)
}
