// Package api is the airlock server's HTTP JSON API, on loopback behind a
// bearer token: it starts and reads jobs (through jobs, over Temporal) and
// keeps the list of nodes that registered. It is a front end that never
// executes a call itself: every call of a job is decided and run on the
// node that claimed it. Only internal/cli imports it.
//
//	POST /v1/jobs            start a job            → 201 {"id": ...}
//	GET  /v1/jobs            every job, from Temporal's visibility (?running=1: those still running)
//	GET  /v1/jobs/{id}       a job's state and result (?wait=1 blocks until it ends)
//	POST /v1/jobs/{id}/kill  cancel a job: its node tears the box down
//	POST /v1/agents/{name}/kill  cancel every running job of an agent
//	POST /v1/hooks/{name}    an outside event: starts the hook's job, tainted, tier 1 only
//	POST /v1/nodes           a node registers (and heartbeats)
//	GET  /v1/nodes           the nodes, their tiers and findings
package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
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
	Wait(ctx context.Context, id string) (jobs.Status, error)
	Kill(ctx context.Context, id string) error
	// List is every job, oldest first; running only those still running.
	List(ctx context.Context, running bool) ([]jobs.Status, error)
	// KillAgent cancels every running job of agent and names them.
	KillAgent(ctx context.Context, agent string) ([]string, error)
}

// Config configures the API.
type Config struct {
	// Token is the bearer token every request must carry; "" refuses all.
	Token string
	Jobs  Jobs
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
}

// Server serves the API.
type Server struct {
	cfg Config

	// The jobs are not kept here: each job's summary rides in its
	// workflow's memo, and the list is Temporal's, so a restart loses none.
	mu    sync.Mutex
	nodes map[string]NodeEntry
}

// NodeEntry is a registered node as GET /v1/nodes lists it.
type NodeEntry struct {
	ID       string    `json:"id"`
	Pool     string    `json:"pool"`
	Tier     int       `json:"tier"`
	Findings []string  `json:"findings,omitempty"`
	Queues   []string  `json:"queues"`
	LastSeen time.Time `json:"last_seen"`
	Live     bool      `json:"live"`
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
	return &Server{cfg: cfg, nodes: map[string]NodeEntry{}}
}

// Handler is the API's HTTP handler, every route behind the token.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", s.startJob)
	mux.HandleFunc("GET /v1/jobs", s.listJobs)
	mux.HandleFunc("GET /v1/jobs/{id}", s.getJob)
	mux.HandleFunc("POST /v1/jobs/{id}/kill", s.killJob)
	mux.HandleFunc("POST /v1/agents/{name}/kill", s.killAgent)
	mux.HandleFunc("POST /v1/hooks/{name}", s.hook)
	mux.HandleFunc("POST /v1/nodes", s.registerNode)
	mux.HandleFunc("GET /v1/nodes", s.listNodes)
	return s.authorized(mux)
}

// authorized refuses a request without the server's bearer token, in
// constant time, before any route reads it.
func (s *Server) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || s.cfg.Token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			writeError(w, http.StatusUnauthorized, "a bearer token is required (the server's token file)")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		next.ServeHTTP(w, r)
	})
}

// StartRequest is the body of POST /v1/jobs.
type StartRequest struct {
	Pool    string   `json:"pool,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Command string   `json:"command,omitempty"`
	Policy  string   `json:"policy,omitempty"`
	Mode    string   `json:"mode,omitempty"`
	Tier0   bool     `json:"tier0,omitempty"`
	// ClaimTimeout and RunTimeout are Go durations ("90s"); "" is the
	// server's default.
	ClaimTimeout string `json:"claim_timeout,omitempty"`
	RunTimeout   string `json:"run_timeout,omitempty"`
	// Agent names the agent the job acts for (POST /v1/agents/NAME/kill
	// stops all of its jobs).
	Agent string `json:"agent,omitempty"`
	// Idempotent says running the job twice does no harm; Retries (only
	// for such a job) is how often it runs again when its node is lost.
	Idempotent bool `json:"idempotent,omitempty"`
	Retries    int  `json:"retries,omitempty"`
}

// Started is the answer to POST /v1/jobs.
type Started struct {
	ID    string `json:"id"`
	Queue string `json:"queue"`
	Floor int    `json:"floor"`
}

func (s *Server) startJob(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if !decode(w, r, &req) {
		return
	}
	j, err := s.job(req, "person")
	if err == nil {
		err = s.cfg.Jobs.Start(r.Context(), j)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, Started{ID: j.ID, Queue: j.Queue(), Floor: j.Floor()})
}

// job turns a request into a job with a fresh id and the server's bounds.
func (s *Server) job(req StartRequest, source string) (jobs.Job, error) {
	j := jobs.Job{ID: newID(), Pool: req.Pool, Argv: req.Argv, Command: req.Command, Policy: req.Policy,
		Mode: req.Mode, Tier0: req.Tier0, Source: source, ClaimTimeout: s.cfg.ClaimTimeout,
		Agent: req.Agent, Idempotent: req.Idempotent, Retries: req.Retries,
		MaxWall: s.cfg.MaxWall, MaxMemory: s.cfg.MaxMemory}
	if j.Pool == "" {
		j.Pool = jobs.DefaultPool
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
	return j, j.Validate()
}

// JobView is a job as GET /v1/jobs and /v1/jobs/{id} show it.
// Its summary (pool, queue, floor, taint, source, command, agent, retries)
// is what its start recorded in Temporal.
type JobView struct {
	jobs.Status
	jobs.Summary
}

// view is the job with the summary its start recorded in Temporal.
func view(st jobs.Status) JobView { return JobView{Status: st, Summary: st.Summary} }

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := jobs.CheckName("job id", id); err != nil {
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
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, view(st))
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
	out := make([]JobView, 0, len(list))
	for _, st := range list {
		out = append(out, view(st))
	}
	writeJSON(w, http.StatusOK, out)
}

// Killed is the answer to POST /v1/agents/{name}/kill.
type Killed struct {
	Agent string   `json:"agent"`
	Jobs  []string `json:"jobs"`
}

// killAgent is the kill switch for an agent: every running job it acts
// for is cancelled, whichever node runs it.
func (s *Server) killAgent(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := jobs.CheckName("agent", name); err != nil {
		writeErr(w, err)
		return
	}
	killed, err := s.cfg.Jobs.KillAgent(r.Context(), name)
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
	if err := jobs.CheckName("job id", id); err != nil {
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
	if err == nil {
		j.Tainted, j.Input = true, string(body)
		err = s.cfg.Jobs.Start(r.Context(), j)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, Started{ID: j.ID, Queue: j.Queue(), Floor: j.Floor()})
}

// Registration is the body of POST /v1/nodes.
type Registration struct {
	ID       string   `json:"id"`
	Pool     string   `json:"pool"`
	Tier     int      `json:"tier"`
	Findings []string `json:"findings,omitempty"`
	Queues   []string `json:"queues"`
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
	s.mu.Lock()
	s.nodes[reg.ID] = NodeEntry{ID: reg.ID, Pool: reg.Pool, Tier: reg.Tier, Findings: reg.Findings,
		Queues: reg.Queues, LastSeen: s.cfg.Now()}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"temporal": s.cfg.Temporal, "namespace": s.cfg.Namespace})
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now()
	s.mu.Lock()
	out := make([]NodeEntry, 0, len(s.nodes))
	for _, n := range s.nodes {
		n.Live = now.Sub(n.LastSeen) <= s.cfg.NodeTTL
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
	case errors.Is(err, io.EOF):
		return "the body is empty: want a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body is not JSON: it ends inside a value"
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
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
