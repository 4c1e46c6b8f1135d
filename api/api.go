// Package api is the airlock server's HTTP JSON API, on loopback behind
// bearer tokens of three roles (node: its own registration and its runs'
// questions only; operator: jobs and approvals; admin: also opt-outs and
// nodes): it starts and reads jobs (through jobs, over
// Temporal), keeps the list of nodes that registered, and holds the
// server's audit log. It is a front end that never
// executes a call itself: every call of a job is decided and run on the
// node that claimed it. Every job-scoped route is held to the token's
// tenant (ownJob): another tenant's job is answered as one that does not
// exist. Only internal/fleetcli imports it (its clients read the bodies
// from api/wire).
//
//	POST /v1/jobs            start a job            → 201 {"id": ...}
//	GET  /v1/jobs            the tenant's jobs (an admin's: every job), from Temporal's visibility (?running=1: those still running)
//	GET  /v1/jobs/{id}       a job's state and result (?wait=1 blocks until it ends)
//	POST /v1/jobs/{id}/kill  cancel a job: its node tears the box down
//	POST /v1/jobs/{id}/calls    add a call to an open job → its result (200), or 202 while it runs
//	POST /v1/jobs/{id}/release  end an open job once its calls are done
//	GET  /v1/jobs/{id}/trace    the job's calls: node, tier, verdict, reason of each
//	POST /v1/agents/{name}/kill  cancel every running job of the tenant's agent (an admin's: every tenant's)
//	POST /v1/hooks/{name}    an outside event: starts the hook's job, tainted, tier 1 only
//	POST /v1/nodes/enroll    a node enrols: a certificate for its CSR (behind the enrolment token)
//	POST /v1/nodes           a node registers (and heartbeats) with its signed attestation (node token: its own id only)
//	GET  /v1/nodes           the nodes, their tiers, findings and health
//	POST /v1/nodes/{id}/sandbox-optout  (admin) start, approve or end a node's opt-out
//	POST /v1/jobs/{id}/questions        a node raises a job's escalation (node token: in its own name only)
//	GET  /v1/approvals       the tenant's escalations waiting for a person
//	POST /v1/approvals/{id}  answer one, bound to its digest
//	GET  /v1/audit?job=ID    the server's audit records of the tenant's job (no job: all the tenant's)
//	POST /v1/files?job=ID, GET /v1/files/{ref}?job=ID, GET /v1/files?job=ID  files of a job's tree (files.go)
//	GET  /v1/quotas          the fleet's quotas and the slots jobs hold
package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// maxBody bounds a request's body: a job's policy and command fit well
// within it.
const maxBody = 1 << 20

// maxWait bounds a ?wait=1 read.
const maxWait = 10 * time.Minute

// Jobs is what the API needs of the fleet (jobs.Client).
type Jobs interface {
	Start(ctx context.Context, j jobs.Job) error
	Get(ctx context.Context, id string) (jobs.Status, error)
	// Summary is job id's summary alone (its memo), at the same cost
	// whether it runs or ended.
	Summary(ctx context.Context, id string) (jobs.Summary, error)
	Wait(ctx context.Context, id string) (jobs.Status, error)
	Kill(ctx context.Context, id string) error
	Ask(ctx context.Context, id string, q jobs.Question) error
	Answer(ctx context.Context, id string, a jobs.Answer) error
	Questions(ctx context.Context, id string) ([]jobs.Question, error)
	// List is every job, oldest first; running only those still running.
	List(ctx context.Context, running bool) ([]jobs.Status, error)
	// KillAgent cancels every running job of agent whose summary mine
	// accepts (the caller's tenant's) and names them.
	KillAgent(ctx context.Context, agent string, mine func(jobs.Summary) bool) ([]string, error)
}

// Config configures the API.
type Config struct {
	// Token is the operator's bearer token; "" is none.
	Token string
	// Admins are the admins' tokens, by name.
	Admins []Admin
	// Tenants are the operator tokens of named tenants; Token is tenant
	// jobs.DefaultTenant's. Every job is its starting token's tenant's.
	Tenants []Tenant
	// Quotas are the fleet's quotas, shown by GET /v1/quotas; nil shows
	// none.
	Quotas QuotaView
	Jobs   Jobs
	// Audit is the server's audit log; nil keeps none (tests).
	Audit *audit.Log
	// FourEyes makes a node's sandbox opt-out hold only once a second,
	// different admin approves it.
	FourEyes bool
	// OptOuts are the sandbox opt-outs saved before a restart;
	// SaveOptOuts, when set, is given all of them after every change.
	OptOuts     []OptOut
	SaveOptOuts func([]OptOut) error
	// Dev lets every node take floor work (airlock server --dev).
	Dev bool
	// VettedModels are the models the tenant vetted: a job naming any
	// other is tier 1 only and tainted.
	VettedModels []string
	// Temporal and Namespace are told to nodes when they register.
	Temporal, Namespace string
	// ClaimTimeout is how long a job waits for an eligible node; 0 is
	// jobs.DefaultClaimTimeout. A job may ask for less, never more.
	ClaimTimeout time.Duration
	// Hooks are the jobs outside events start, by name.
	Hooks map[string]Hook
	// MaxWall and MaxMemory are the ceilings every job gets, which its
	// policy cannot raise (0: none).
	MaxWall   time.Duration
	MaxMemory int64
	// NodeTTL is how long a node counts as live after its last
	// heartbeat; 0 is 30 s.
	NodeTTL time.Duration
	Now     func() time.Time
	Log     *slog.Logger
	// CA, when set, turns enrolment on: POST /v1/nodes/enroll issues node
	// certificates (behind EnrollToken, not Token), and a registration
	// must carry an attestation signed with the enrolled key; the tier
	// recorded is what it proves. nil takes a node's tier as claimed.
	CA          *pki.CA
	EnrollToken string
	// NodeCertLifetime is how long a node's certificate lasts; 0 is
	// pki.DefaultNodeLifetime.
	NodeCertLifetime time.Duration
	// Files is the fleet's file store (/v1/files), scoped to job trees;
	// nil keeps none. Provenance records who kept each file and the
	// taint reads brought; nil (with Files) keeps it in memory only.
	Files      Files
	Provenance *Provenance
}

// Server serves the API.
type Server struct {
	cfg Config

	// ctx ends with Close: it bounds the watches that record jobs' ends.
	ctx    context.Context
	cancel context.CancelFunc

	// The job list, every view and a child's parent come from Temporal
	// (each job's summary rides in its workflow's memo), so a restart
	// loses none.
	mu        sync.Mutex
	nodes     map[string]NodeEntry
	optouts   map[string]OptOut
	questions map[string]questionEntry
	prov      *Provenance
}

// New returns the API's server.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ClaimTimeout <= 0 {
		cfg.ClaimTimeout = jobs.DefaultClaimTimeout
	}
	if cfg.NodeTTL <= 0 {
		cfg.NodeTTL = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, ctx: ctx, cancel: cancel, nodes: map[string]NodeEntry{},
		optouts: map[string]OptOut{}, questions: map[string]questionEntry{}}
	for _, o := range cfg.OptOuts {
		s.optouts[o.Node] = o
	}
	if s.prov = cfg.Provenance; s.prov == nil {
		s.prov, _ = OpenProvenance("") // in memory: cannot fail
	}
	return s
}

// Close stops the watches that record jobs' ends.
func (s *Server) Close() { s.cancel() }

// Handler is the API's HTTP handler, every route behind a token, each
// needing its role.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", OperatorOnly(s.startJob))
	mux.HandleFunc("GET /v1/jobs", OperatorOnly(s.listJobs))
	mux.HandleFunc("GET /v1/jobs/{id}", OperatorOnly(s.getJob))
	mux.HandleFunc("POST /v1/jobs/{id}/kill", OperatorOnly(s.killJob))
	mux.HandleFunc("POST /v1/agents/{name}/kill", OperatorOnly(s.killAgent))
	mux.HandleFunc("POST /v1/jobs/{id}/calls", OperatorOnly(s.addCall))
	mux.HandleFunc("POST /v1/jobs/{id}/release", OperatorOnly(s.release))
	mux.HandleFunc("GET /v1/jobs/{id}/trace", OperatorOnly(s.trace))
	mux.HandleFunc("POST /v1/jobs/{id}/questions", NodeOrOperator(s.raise))
	mux.HandleFunc("POST /v1/hooks/{name}", OperatorOnly(s.hook))
	mux.HandleFunc("POST /v1/nodes", NodeOrOperator(s.registerNode))
	mux.HandleFunc("POST /v1/nodes/{id}/challenge", NodeOrOperator(s.challenge))
	mux.HandleFunc("GET /v1/nodes", OperatorOnly(s.listNodes))
	mux.HandleFunc("POST /v1/nodes/{id}/sandbox-optout", AdminOnly(s.optOut))
	mux.HandleFunc("GET /v1/approvals", OperatorOnly(s.listApprovals))
	mux.HandleFunc("POST /v1/approvals/{id}", OperatorOnly(s.answer))
	mux.HandleFunc("GET /v1/audit", OperatorOnly(s.getAudit))
	mux.HandleFunc("POST /v1/files", NodeOrOperator(s.putFile))
	mux.HandleFunc("GET /v1/files/{ref}", NodeOrOperator(s.getFile))
	mux.HandleFunc("GET /v1/files", OperatorOnly(s.listFiles))
	mux.HandleFunc("GET /v1/quotas", OperatorOnly(s.getQuotas))
	outer := http.NewServeMux()
	outer.HandleFunc("POST /v1/nodes/enroll", s.enroll) // behind the enrolment token instead
	outer.Handle("/", s.authorized(mux))
	return outer
}

func started(j jobs.Job) Started {
	return Started{ID: j.ID, Queue: j.Queue(), Floor: j.Floor(), Tainted: j.Tainted, Taint: j.Taint, Dev: j.Dev}
}

func (s *Server) startJob(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if !decode(w, r, &req) {
		return
	}
	j, err := s.job(req, "person")
	if err == nil {
		err = s.start(r.Context(), j)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, started(j))
}

// start starts j, keeps it in the list, records its start (and taint) and
// watches for its end.
func (s *Server) start(ctx context.Context, j jobs.Job) error {
	if err := s.own(ctx, &j); err != nil {
		return err
	}
	if err := s.startTree(ctx, j); err != nil {
		return err
	}
	if err := s.cfg.Jobs.Start(ctx, j); err != nil {
		return err
	}
	s.record(AuditJobStart, jobFields(j, PrincipalOf(ctx).Name))
	if j.Tainted {
		s.record(AuditJobTaint, map[string]any{"job": j.ID, "tenant": j.Tenant, "taint": j.Taint})
	}
	go s.watch(j)
	return nil
}

// watch records how j ended, and a run that took place under a node's
// sandbox opt-out as tier 0.
func (s *Server) watch(j jobs.Job) {
	st, err := s.cfg.Jobs.Wait(s.ctx, j.ID)
	if err != nil {
		return // the server is stopping; the job goes on in Temporal
	}
	f := map[string]any{"job": j.ID, "tenant": j.Tenant, "state": st.State}
	if st.Error != "" {
		f["error"] = st.Error
	}
	if r := st.Result; r != nil {
		f["node"], f["tier"], f["exit_code"], f["refused"] = r.Node, r.Tier, r.ExitCode, r.Refused
		if r.OptedOut {
			s.mu.Lock()
			o := s.optouts[r.Node]
			s.mu.Unlock()
			s.record(AuditTier0, map[string]any{"job": j.ID, "tenant": j.Tenant, "node": r.Node, "optout_reason": o.Reason, "optout_by": o.By})
		}
	}
	s.record(AuditJobEnd, f)
}

// job turns a request into a job with a fresh id and the server's bounds.
func (s *Server) job(req StartRequest, source string) (jobs.Job, error) {
	j := jobs.Job{ID: newID(), Pool: req.Pool, Argv: req.Argv, Command: req.Command, Policy: req.Policy,
		Mode: req.Mode, Tier0: req.Tier0, Source: source, ClaimTimeout: s.cfg.ClaimTimeout,
		Model: req.Model, Parent: req.Parent, Dev: s.cfg.Dev,
		Agent: req.Agent, Idempotent: req.Idempotent, Retries: req.Retries,
		MaxWall: s.cfg.MaxWall, MaxMemory: s.cfg.MaxMemory}
	if j.Pool == "" {
		j.Pool = jobs.DefaultPool
	}
	if err := startCalls(req, &j); err != nil {
		return j, err
	}
	if err := s.taint(&j); err != nil {
		return j, err
	}
	if req.ClaimTimeout != "" {
		d, err := time.ParseDuration(req.ClaimTimeout)
		if err != nil || d <= 0 {
			return j, errs.Invalidf("claim_timeout %q: want a positive duration such as 90s", req.ClaimTimeout)
		}
		j.ClaimTimeout = min(d, s.cfg.ClaimTimeout)
	}
	if req.RunTimeout != "" {
		d, err := time.ParseDuration(req.RunTimeout)
		if err != nil || d <= 0 {
			return j, errs.Invalidf("run_timeout %q: want a positive duration such as 10m", req.RunTimeout)
		}
		j.RunTimeout = d
	}
	s.ceilings(&j)
	if err := leaseBounds(j); err != nil {
		return j, err
	}
	return j, j.Validate()
}

func (s *Server) view(st jobs.Status) JobView {
	v := JobView{Status: st, Summary: st.Summary, LowestTier: lowestTier(st)}
	if why := s.readTaint(st.ID); why != "" {
		v.Tainted, v.Taint = true, joinTaint(v.Taint, why)
	}
	if st.Summary.Dev {
		v.Notes = append(v.Notes, "the server runs --dev: any node may take this job's floor work, unconfined on a node without a sandbox")
	}
	if r := st.Result; r != nil && r.OptedOut {
		v.Notes = append(v.Notes, fmt.Sprintf("ran on node %s under a sandbox opt-out: every call of it counts as tier 0", r.Node))
	}
	return v
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.ownJob(r, id); err != nil {
		writeErr(w, err)
		return
	}
	var st jobs.Status
	var err error
	if r.URL.Query().Get("wait") == "1" {
		ctx, cancel := context.WithTimeout(r.Context(), maxWait)
		defer cancel()
		st, err = s.cfg.Jobs.Wait(ctx, id)
	} else {
		st, err = s.cfg.Jobs.Get(r.Context(), id)
	}
	if err == nil {
		err = s.outputRead(st, hasOutput(st.Result))
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.view(st))
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	var running bool
	switch r.URL.Query().Get("running") {
	case "", "0":
	case "1":
		running = true
	default:
		writeErr(w, errs.Invalidf("running %q: want 1 or 0", r.URL.Query().Get("running")))
		return
	}
	list, err := s.cfg.Jobs.List(r.Context(), running)
	if err != nil {
		writeErr(w, err)
		return
	}
	// Only the token's tenant's jobs are listed, and only what is listed
	// counts as read (a tainted child's output taints its parent).
	seen := list[:0:0]
	for _, st := range list {
		if sees(r.Context(), withTenant(st.Summary)) {
			seen = append(seen, st)
		}
	}
	out := make([]JobView, 0, len(seen))
	for _, st := range seen {
		if err := s.outputRead(st, hasOutput(st.Result)); err != nil {
			writeErr(w, err)
			return
		}
	}
	for _, st := range seen {
		out = append(out, s.view(st))
	}
	writeJSON(w, http.StatusOK, out)
}

// killAgent is the kill switch for an agent: every running job it acts
// for is cancelled, whichever node runs it. An agent is its tenant's: an
// operator's kill reaches its own tenant's jobs of that name only, an
// admin's every tenant's.
func (s *Server) killAgent(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := jobs.CheckName("agent", name); err != nil {
		writeErr(w, err)
		return
	}
	mine := func(sum jobs.Summary) bool { return sees(r.Context(), withTenant(sum)) }
	killed, err := s.cfg.Jobs.KillAgent(r.Context(), name, mine)
	if err != nil {
		writeErr(w, err)
		return
	}
	if killed == nil {
		killed = []string{}
	}
	s.cfg.Log.Info("agent killed", "agent", name, "jobs", strings.Join(killed, " "))
	writeJSON(w, http.StatusAccepted, Killed{Agent: name, Jobs: killed})
}

func (s *Server) killJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.ownJob(r, id); err != nil {
		writeErr(w, err)
		return
	}
	if err := s.cfg.Jobs.Kill(r.Context(), id); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": id, "state": "killing"})
}

// Hook is the job an outside event starts: the server's own, never the
// event's. The event's body is the command's standard input.
type Hook struct {
	Pool    string   `json:"pool,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Command string   `json:"command,omitempty"`
	// Policy is the policy document's text.
	Policy string `json:"policy,omitempty"`
	Mode   string `json:"mode,omitempty"`
}

// hook starts the job of an outside event. Its body is text from outside,
// so the job is tainted from its start: it runs on a tier-1 node only,
// whatever the hook says, and fails naming the fix when none takes it.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	h, ok := s.cfg.Hooks[name]
	if !ok {
		writeErr(w, errs.NotFoundf("hook %q: not configured on this server", name))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", maxBody))
		return
	}
	j, err := s.job(StartRequest{Pool: h.Pool, Argv: h.Argv, Command: h.Command, Policy: h.Policy, Mode: h.Mode}, "hook:"+name)
	if err != nil {
		writeErr(w, err)
		return
	}
	j.Tainted, j.Input = true, string(body)
	j.Taint = joinTaint("an outside event (hook:"+name+")", j.Taint)
	// Refused at once rather than after the claim timeout: no node could
	// take it now.
	if !s.tier1Live(j.Pool) {
		writeError(w, http.StatusConflict, fmt.Sprintf("hook %s: pool %s has no live node with sandbox tier 1 that is not opted out, and an outside event's job runs only there: "+
			"start one (`airlock node --server URL --pool %s` on Linux with bubblewrap; `airlock sandbox check` says what a host lacks), or end a node's opt-out (`airlock node sandbox-optout NODE --end`)",
			name, j.Pool, j.Pool))
		return
	}
	if err := s.start(r.Context(), j); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, started(j))
}

// taint marks j tainted when it may use a model the tenant has not vetted
// or its parent is tainted, and carries the parent's floor over.
func (s *Server) taint(j *jobs.Job) error {
	if err := checkModel(j.Model); err != nil {
		return err
	}
	if j.Model != "" && !slices.Contains(s.cfg.VettedModels, j.Model) {
		j.Tainted, j.Taint = true, joinTaint(j.Taint, fmt.Sprintf("model %s is not vetted", j.Model))
	}
	if j.Parent == "" {
		return nil
	}
	if err := jobs.CheckName("parent", j.Parent); err != nil {
		return err
	}
	p, err := s.parent(j.Parent)
	if err != nil {
		return err
	}
	if p.Floor >= 1 {
		j.Tier0 = false
	}
	if p.Tainted {
		j.Tainted, j.Taint = true, joinTaint(j.Taint, "started by tainted job "+j.Parent+" ("+p.Taint+")")
	}
	if why := s.readTaint(j.Parent); why != "" {
		j.Tainted, j.Taint = true, joinTaint(j.Taint, "started by job "+j.Parent+", which "+why)
	}
	return nil
}

// parent is the summary of a child's parent job, from Temporal.
func (s *Server) parent(id string) (jobs.Summary, error) {
	p, err := s.summary(s.ctx, id)
	if err != nil && errs.ClassOf(err) != errs.NotFound {
		return jobs.Summary{}, err
	}
	if err != nil || p.Pool == "" {
		return jobs.Summary{}, parentNotFound(id)
	}
	return p, nil
}

func joinTaint(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// Registration is the body of POST /v1/nodes.
type Registration struct {
	ID       string   `json:"id"`
	Pool     string   `json:"pool"`
	Tier     int      `json:"tier"`
	Findings []string `json:"findings,omitempty"`
	Queues   []string `json:"queues"`
	// Attestation is the node's signed selftest report (see attest).
	Attestation *pki.Attestation `json:"attestation,omitempty"`
}

func (s *Server) registerNode(w http.ResponseWriter, r *http.Request) {
	var reg Registration
	if !decode(w, r, &reg) {
		return
	}
	if err := errors.Join(jobs.CheckName("node id", reg.ID), jobs.CheckName("pool", reg.Pool)); err != nil {
		writeErr(w, err)
		return
	}
	if reg.Tier < 0 || reg.Tier > 2 {
		writeErr(w, errs.Invalidf("node %s: tier %d: want 0, 1 or 2", reg.ID, reg.Tier))
		return
	}
	if !actsAs(w, r, reg.ID) {
		return
	}
	tier, findings, err := s.attest(reg)
	s.mu.Lock()
	if _, known := s.nodes[reg.ID]; err != nil && !known {
		// Listed at tier 0 with the reason; a known node is left as its
		// own signed reports made it.
		s.nodes[reg.ID] = NodeEntry{ID: reg.ID, Pool: reg.Pool, ClaimedTier: reg.Tier, LastSeen: s.cfg.Now(),
			Findings: []string{"error: attestation: " + errs.AgentMessage(err)}}
	} else if err == nil {
		s.nodes[reg.ID] = NodeEntry{ID: reg.ID, Pool: reg.Pool, Tier: tier, ClaimedTier: reg.Tier, Findings: findings,
			Queues: reg.Queues, LastSeen: s.cfg.Now()}
	}
	ans := Registered{Temporal: s.cfg.Temporal, Namespace: s.cfg.Namespace,
		OptedOut: s.optedOutLocked(reg.ID), Floor: s.floorLocked(reg.ID)}
	s.mu.Unlock()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// Registered is the answer to POST /v1/nodes: where Temporal is, and what
// the node may take.
type Registered struct {
	Temporal  string `json:"temporal"`
	Namespace string `json:"namespace"`
	// OptedOut says an admin's sandbox opt-out holds for the node (it
	// declines tainted work); Floor that it may take floor work below
	// tier 1 (an opt-out, or --dev).
	OptedOut bool `json:"opted_out,omitempty"`
	Floor    bool `json:"floor,omitempty"`
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now()
	s.mu.Lock()
	out := make([]NodeEntry, 0, len(s.nodes))
	for _, n := range s.nodes {
		n.Live = now.Sub(n.LastSeen) <= s.cfg.NodeTTL
		if o, ok := s.optouts[n.ID]; ok {
			n.OptOut = &o
		}
		n.Health = s.healthLocked(n)
		out = append(out, n)
	}
	s.mu.Unlock()
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	writeJSON(w, http.StatusOK, out)
}

// decode reads the body as exactly one JSON object of v's fields.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", maxBody))
		return false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		writeError(w, http.StatusBadRequest, "the body is empty: want a JSON object")
		return false
	}
	// A key given twice (or under two spellings the decoder folds to one)
	// is refused, not read as its last spelling.
	if err := jobs.CheckJSON(b); err != nil {
		writeError(w, http.StatusBadRequest, errs.AgentMessage(err))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, decodeError(err))
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "the body holds more than one JSON value")
		return false
	}
	return true
}

// decodeError says which field of a body was wrong, and how, in the
// API's own words rather than Go's (no Go type names).
func decodeError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return fmt.Sprintf("field %q: got a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
	case errors.As(err, &te):
		return fmt.Sprintf("the body: got a JSON %s, want an object", te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("the body is not JSON (at byte %d): %v", se.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body is not JSON: it ends inside a value"
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if msg, ok := tenantField(name); ok {
			return msg
		}
		return fmt.Sprintf("field %s: not a field of this route", name)
	}
	return "the body is not the JSON this route takes: " + err.Error()
}

// jsonKind names a Go kind as the JSON it is decoded from.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	}
	return "a number"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeErr answers with err's class as the status and its message only.
func writeErr(w http.ResponseWriter, err error) {
	writeError(w, errs.HTTPStatus(err), errs.AgentMessage(err))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// newID is a fresh job id: random, so no job is started under an id that
// names an earlier job's files.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return "j-" + hex.EncodeToString(b[:])
}
