// Package wire holds the bodies of the server's HTTP JSON API that its
// clients send and read (a job's start and view, a node's entry, an
// opt-out, an answer), apart from api itself, which links the Temporal SDK
// through jobs: the airlock binary's HTTP clients (airlock job, approvals,
// kill, node list) import this package and never api. api re-exports every
// type here. Imported by api and the CLI.
package wire

import (
	"time"

	jobwire "github.com/airlock-run/airlock/jobs/wire"
)

// NodeEntry is a registered node as GET /v1/nodes lists it.
type NodeEntry struct {
	ID   string `json:"id"`
	Pool string `json:"pool"`
	// Tier is the attested tier, which routes work; ClaimedTier what the
	// node said.
	Tier        int       `json:"tier"`
	ClaimedTier int       `json:"claimed_tier"`
	Findings    []string  `json:"findings,omitempty"`
	Queues      []string  `json:"queues"`
	LastSeen    time.Time `json:"last_seen"`
	Live        bool      `json:"live"`
	// OptOut is the node's sandbox opt-out, held or pending.
	OptOut *OptOut `json:"opt_out,omitempty"`
	// Health is what a person should act on, each with its fix.
	Health []string `json:"health,omitempty"`
}

// StartRequest is the body of POST /v1/jobs.
type StartRequest struct {
	Pool    string   `json:"pool,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Command string   `json:"command,omitempty"`
	Policy  string   `json:"policy,omitempty"`
	Mode    string   `json:"mode,omitempty"`
	Tier0   bool     `json:"tier0,omitempty"`
	// Model is the model the job's agent may use: one outside the
	// server's vetted list makes the job tier 1 only and tainted.
	Model string `json:"model,omitempty"`
	// Parent is the job starting this one: its taint and floor carry over.
	Parent string `json:"parent,omitempty"`
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
	// Calls are the job's calls, instead of argv or command; Open makes
	// it take more (POST /v1/jobs/{id}/calls) until released or idle for
	// IdleTimeout (a Go duration; "" is 10m).
	Calls []jobwire.Call `json:"calls,omitempty"`
	Open  bool           `json:"open,omitempty"`
	// MCP are the job's MCP servers by name (server → stdio argv), for
	// its tool calls.
	MCP         map[string][]string `json:"mcp,omitempty"`
	IdleTimeout string              `json:"idle_timeout,omitempty"`
}

// Started is the answer to POST /v1/jobs.
type Started struct {
	ID    string `json:"id"`
	Queue string `json:"queue"`
	Floor int    `json:"floor"`
	// Tainted and Taint say whether and why the job is tainted.
	Tainted bool   `json:"tainted"`
	Taint   string `json:"taint,omitempty"`
	Dev     bool   `json:"dev,omitempty"`
}

// JobView is a job as GET /v1/jobs and /v1/jobs/{id} show it. Its
// summary (pool, queue, floor, taint, source, command, agent, retries) is
// what its start recorded in Temporal.
type JobView struct {
	jobwire.Status
	jobwire.Summary
	// LowestTier is the lowest sandbox tier any of its calls ran at (a
	// call under an opt-out counts as 0), once it ended.
	LowestTier *int `json:"lowest_tier,omitempty"`
	// Notes are what a person must know of where it ran: the server's
	// --dev, a run under a node's sandbox opt-out.
	Notes []string `json:"notes,omitempty"`
}

// Killed is the answer to POST /v1/agents/{name}/kill.
type Killed struct {
	Agent string   `json:"agent"`
	Jobs  []string `json:"jobs"`
}

// AnswerRequest is the body of POST /v1/approvals/{id}.
type AnswerRequest struct {
	// Answer is "allow-once" or "deny".
	Answer string `json:"answer"`
	// Digest is the question's digest as GET /v1/approvals listed it: the
	// answer is for that call and no other.
	Digest string `json:"digest"`
	// Job names the question's job; needed only for a question this
	// server did not see raised (it restarted since), which is then read
	// from the job's workflow.
	Job string `json:"job,omitempty"`
}

// OptOut is an admin's sandbox opt-out of one node: while it holds the
// node may take floor work started from inside (never outside-event or
// tainted work), and what runs there counts as tier 0.
type OptOut struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
	// By is the admin who asked for it; Approvers the others who agreed
	// (four eyes).
	By        string    `json:"by"`
	Approvers []string  `json:"approvers,omitempty"`
	Since     time.Time `json:"since"`
	// Pending says it waits for a second admin's approval.
	Pending bool `json:"pending,omitempty"`
}

// OptOutRequest is the body of POST /v1/nodes/{id}/sandbox-optout.
type OptOutRequest struct {
	// Reason says why the node may run floor work unconfined; required to
	// start one.
	Reason string `json:"reason,omitempty"`
	// End ends the node's opt-out (held or pending) at once.
	End bool `json:"end,omitempty"`
	// Approve is a second admin's approval of a pending opt-out.
	Approve bool `json:"approve,omitempty"`
}

// FileInfo is a file of a tree as GET /v1/files lists it.
type FileInfo struct {
	Ref  string `json:"ref"`
	Size int64  `json:"size"`
	// Via is "stored" for a file the tree kept, "handed" for one a
	// person handed it.
	Via    string    `json:"via"`
	Stored time.Time `json:"stored"`
	// Jobs are the jobs of the tree that kept it.
	Jobs []string `json:"jobs"`
	// Tainted and Taint say whether and why reading it taints the reader.
	Tainted bool   `json:"tainted"`
	Taint   string `json:"taint,omitempty"`
}

// Kept is the answer to POST /v1/files.
type Kept struct {
	Ref  string `json:"ref"`
	Size int    `json:"size"`
	Job  string `json:"job"`
	// Tainted and Taint are the keeping job's: a reader of the file is
	// tainted by them.
	Tainted bool   `json:"tainted"`
	Taint   string `json:"taint,omitempty"`
}

// MaxFile and TaintHeader are the file store's names on the wire
// (jobs/wire).
const (
	MaxFile     = jobwire.MaxFile
	TaintHeader = jobwire.TaintHeader
)
