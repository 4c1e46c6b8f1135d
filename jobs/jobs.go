// Package jobs is airlock's fleet over Temporal: what a job is, the
// workflow that routes it by sandbox tier, the node side that claims and
// runs it, and the client a server starts and reads jobs with. It is the
// only importer of the Temporal SDK (go.temporal.io/sdk); the Temporal
// server itself is jobs/server's, and the plain wire types are jobs/wire's
// (re-exported here). Front ends (node, api) and internal/fleetcli import
// it; nothing below them does.
//
// A job is routed in two steps, because a worker that stopped can still
// hold a poll that takes a task:
//
//	workflow ──quota──▶ airlock.workflows (a slot, only when a quota bounds the job)
//	         ──claim──▶ <pool>          (any node of the pool)
//	         ──claim──▶ floor.<pool>    (tier-1 nodes only: every command job)
//	         ◀─ node id, tier ──
//	         ──open───▶ node.<id>       (the node that claimed: the job's kernel)
//	         ──lease──▶ node.<id>       (held, heartbeating, for the job's life)
//	         ──call───▶ node.<id>       (each call of the job, one activity each)
//	         ──close──▶ node.<id>
//
// A closed job of one call runs its open, call and close as one activity
// instead (LeaseCallActivity, heartbeating throughout).
//
// The claim is short (claimStartToClose): a claim taken by a stale poll is
// never answered and is put to the queue again until the claim timeout
// (10 minutes by default) ends, when the job fails with the reason and the
// fix. Nothing falls back to a lower tier. Jobs recorded before calls ran
// as one activity (RunActivity) after the claim, and still replay so.
package jobs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-run/airlock/jobs/wire"
)

// The plain wire types and names live in jobs/wire, which imports no
// Temporal package, so that the airlock binary's HTTP clients link them
// without the SDK; these are the same types under their jobs names.
type (
	Job          = wire.Job
	Summary      = wire.Summary
	Claim        = wire.Claim
	ClaimRequest = wire.ClaimRequest
	RunRequest   = wire.RunRequest
	Result       = wire.Result
	Status       = wire.Status
	Question     = wire.Question
	Answer       = wire.Answer
	Waiters      = wire.Waiters
	Call         = wire.Call
	CallResult   = wire.CallResult
	CallRecord   = wire.CallRecord
	Trace        = wire.Trace
	Lease        = wire.Lease
	LeaseRequest = wire.LeaseRequest
	CallRequest  = wire.CallRequest
)

// Names on the wire (see jobs/wire).
const (
	WorkflowName        = wire.WorkflowName
	ClaimActivity       = wire.ClaimActivity
	RunActivity         = wire.RunActivity
	WorkflowQueue       = wire.WorkflowQueue
	DefaultNamespace    = wire.DefaultNamespace
	DefaultPool         = wire.DefaultPool
	DefaultClaimTimeout = wire.DefaultClaimTimeout
	DefaultRunTimeout   = wire.DefaultRunTimeout
	HeartbeatTimeout    = wire.HeartbeatTimeout
	HeartbeatEvery      = wire.HeartbeatEvery
	MaxRetries          = wire.MaxRetries
	OutputCap           = wire.OutputCap
	SignalAsk           = wire.SignalAsk
	SignalAnswer        = wire.SignalAnswer
	AnswerActivity      = wire.AnswerActivity
	QueryQuestions      = wire.QueryQuestions
	AnswerAllowOnce     = wire.AnswerAllowOnce
	AnswerDeny          = wire.AnswerDeny
	CallExec            = wire.CallExec
	CallShell           = wire.CallShell
	CallReadFile        = wire.CallReadFile
	CallWriteFile       = wire.CallWriteFile
	CallList            = wire.CallList
	CallReadResult      = wire.CallReadResult
	CallTool            = wire.CallTool
	OpenActivity        = wire.OpenActivity
	LeaseActivity       = wire.LeaseActivity
	CallActivity        = wire.CallActivity
	CloseActivity       = wire.CloseActivity
	LeaseCallActivity   = wire.LeaseCallActivity
	SignalCall          = wire.SignalCall
	SignalRelease       = wire.SignalRelease
	QueryTrace          = wire.QueryTrace
	QueryCallResult     = wire.QueryCallResult
	DefaultIdleTimeout  = wire.DefaultIdleTimeout
	MaxCalls            = wire.MaxCalls
	ResultCap           = wire.ResultCap
	MaxFile             = wire.MaxFile
	TaintHeader         = wire.TaintHeader
)

// Record and NewTrace are jobs/wire's.
func Record(c Call, r CallResult) CallRecord { return wire.Record(c, r) }
func NewTrace(j Job) Trace                   { return wire.NewTrace(j) }

// CheckName is wire.CheckName.
func CheckName(what, name string) error { return wire.CheckName(what, name) }

// CheckJSON is wire.CheckJSON.
func CheckJSON(b []byte) error { return wire.CheckJSON(b) }

// PoolQueue, FloorQueue, Tier2Queue and NodeQueue are jobs/wire's queue
// names.
func PoolQueue(pool string) string  { return wire.PoolQueue(pool) }
func FloorQueue(pool string) string { return wire.FloorQueue(pool) }
func Tier2Queue(pool string) string { return wire.Tier2Queue(pool) }
func NodeQueue(id string) string    { return wire.NodeQueue(id) }

// claimStartToClose bounds a claim once a poll took it: a live node answers
// at once, so a claim not answered in this time was taken by a poll whose
// worker is gone, and is put to the queue again.
const claimStartToClose = 10 * time.Second

// nodeStartTimeout bounds the wait for the claiming node to start the run
// on its own queue.
const nodeStartTimeout = time.Minute

// claimTimeout is how long j waits for a node to claim it.
func claimTimeout(j Job) time.Duration {
	if j.ClaimTimeout > 0 {
		return j.ClaimTimeout
	}
	return DefaultClaimTimeout
}

// runTimeout bounds j's run on its node.
func runTimeout(j Job) time.Duration {
	if j.RunTimeout > 0 {
		return j.RunTimeout
	}
	return DefaultRunTimeout
}

// Runner runs a job on a node: the node's front end of the kernel.
type Runner interface {
	Run(ctx context.Context, req RunRequest) (Result, error)
}

// DevConfig configures an embedded Temporal dev server.
type DevConfig struct {
	// Dir holds the server's SQLite file.
	Dir string
	// Namespace is registered at start; "" is DefaultNamespace.
	Namespace string
	// FrontendIP is the address the frontend listens on, where nodes
	// dial it; "" is 127.0.0.1. Anything but a loopback address needs
	// Auth. The services behind the frontend listen on 127.0.0.1 always.
	FrontendIP string
	// Auth makes the frontend take only clients with a certificate of the
	// fleet CA and authorize each call by the identity it names; nil is a
	// frontend with no authentication at all (any local process may poll
	// any queue), which only tests of that shape ask for.
	Auth *DevAuth
}

// DevAuth is the embedded server's mutual TLS and authorization.
type DevAuth struct {
	// CA is the fleet CA's certificate (PEM), the one issuer of client
	// certificates the frontend and the services behind it accept.
	CA []byte
	// Services is the certificate of the frontend and of the services
	// behind it, which they also present to each other.
	Services tls.Certificate
	// Client is what the Temporal server's own system worker presents.
	Client tls.Certificate
	// Eligible says whether node may poll queue, one of its pool's floor
	// or tier-2 queues: the server's node registry answers it from the
	// node's attested tier (and the pool's opt-outs and --dev). nil
	// lets no node poll one.
	Eligible func(node, queue string) bool
	// Standing is what the registry holds of node: its attested tier and
	// whether an admin's opt-out holds for it (known is false for a node
	// that never registered). A node's claims and results are held to it,
	// so an opt-out or --dev that lets a node poll the floor queue never
	// lets it claim a tier it did not prove or hide its opt-out. nil
	// holds them to Eligible alone.
	Standing func(node string) (tier int, optedOut, known bool)
	// Bound refuses a node's certificate whose node id is not bound now
	// to its key and pool (pki.CA.Bound): a revoked or moved id's old
	// certificate is then refused at every call. nil trusts every node
	// certificate of the CA.
	Bound func(cert *x509.Certificate) error
}

// DevServer is a running embedded Temporal server.
type DevServer interface {
	// HostPort is the frontend's loopback address.
	HostPort() string
	Namespace() string
	Stop() error
}

// StartDevServer starts an embedded Temporal server (jobs/server.Start):
// the server binary passes it in, so nothing that imports jobs links the
// Temporal server.
type StartDevServer func(ctx context.Context, cfg DevConfig) (DevServer, error)

// noNodeMessage is the failure of a job no eligible node claimed in time,
// with the fixes.
func noNodeMessage(j Job, waited time.Duration) string {
	if j.Floor() >= 1 {
		fix := fmt.Sprintf("start a node with sandbox tier 1 in pool %s (`airlock node --server URL --pool %s` on Linux with bubblewrap; `airlock sandbox check` says what a host lacks)", j.Pool, j.Pool)
		if !j.Tainted {
			fix += ", or start the job again with --tier0 if it may run unconfined, or have an admin opt a node out (`airlock node sandbox-optout NODE --reason ...`)"
		} else if strings.HasPrefix(j.Taint, "model ") {
			fix += ", or have the tenant vet the model (the server's --vetted-models)"
		}
		return fmt.Sprintf("no node with sandbox tier 1 took job %s from queue %s within %s: %s", j.ID, j.Queue(), waited, fix)
	}
	return fmt.Sprintf("no node took job %s from queue %s within %s: start a node in pool %s (`airlock node --server URL --pool %s`)", j.ID, j.Queue(), waited, j.Pool, j.Pool)
}
