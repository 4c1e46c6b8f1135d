// Package wire holds the fleet's plain wire types and names: a job, its
// claim and result, a node's question and a person's answer, the names of
// the task queues, and the checks of each (CheckName, Job.Validate,
// CheckJSON). It imports no Temporal package, so the airlock binary's HTTP
// clients of the server (airlock job, approvals, kill, node list) link it
// without the Temporal SDK, which only jobs imports; jobs re-exports every
// name here. Imported by jobs, api, api/wire, node and the CLI.
package wire

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// Names on the wire. Changing one breaks running workflows and replay.
const (
	// WorkflowName is the job workflow's registered name.
	WorkflowName = "airlock.job"
	// ClaimActivity is the claim a node answers with its id and tier.
	ClaimActivity = "airlock.claim"
	// RunActivity runs the job on the node that claimed it.
	RunActivity = "airlock.run"
	// WorkflowQueue is the task queue of the workflows themselves, which
	// the server polls: orchestration only, never a call.
	WorkflowQueue = "airlock.workflows"
	// DefaultNamespace is the Temporal namespace of the dev server.
	DefaultNamespace = "airlock"
	// DefaultPool is the pool of a job or node that names none.
	DefaultPool = "default"
)

// DefaultClaimTimeout is how long a job waits for an eligible node to claim
// it before it fails naming the fix.
const DefaultClaimTimeout = 10 * time.Minute

// DefaultRunTimeout bounds a job's run on its node when the job names no
// limit; the policy's own wall-clock limit applies inside it.
const DefaultRunTimeout = time.Hour

// HeartbeatTimeout is how long a running job's node may be silent before
// the job is failed as lost.
const HeartbeatTimeout = 20 * time.Second

// HeartbeatEvery is how often a running job's node heartbeats. A kill
// reaches the node in the answer to a heartbeat, so this bounds the kill
// switch's latency; the SDK's throttle is held to it too.
const HeartbeatEvery = time.Second

// Job is what a person, an app or an outside event asked to run, as the
// workflow carries it. Its policy travels with it: the node decides the
// job's calls against the job's policy, never its own.
type Job struct {
	ID   string `json:"id"`
	Pool string `json:"pool"`
	// Argv is the command; Command, when set instead, is a shell string.
	Argv    []string `json:"argv,omitempty"`
	Command string   `json:"command,omitempty"`
	// Input is the command's standard input: for a job an outside event
	// started, the event's body (text from outside, hence the taint).
	Input string `json:"input,omitempty"`
	// Policy is the policy document's text; "" is the built-in workspace
	// profile.
	Policy string `json:"policy,omitempty"`
	// Mode is "observe" ("" too) or "fix".
	Mode string `json:"mode,omitempty"`
	// Tier0 is a person's or app's consent, for a job started from inside,
	// that it may run on a node without a sandbox. A tainted job ignores it.
	Tier0 bool `json:"tier0,omitempty"`
	// Tainted marks a job that reads text from outside (an outside event
	// started it, it may use a model the tenant has not vetted, or a
	// tainted job started it): it runs on tier 1 only, whatever else it
	// says, and its calls that can send data out wait for a person.
	Tainted bool `json:"tainted,omitempty"`
	// Taint says why the job is tainted, as a person reads it.
	Taint string `json:"taint,omitempty"`
	// Model is the model the job's agent may use; the server checked it
	// against the tenant's vetted list.
	Model string `json:"model,omitempty"`
	// Parent is the job that started this one ("" for none): a child
	// inherits its parent's taint and floor.
	Parent string `json:"parent,omitempty"`
	// Dev says the server runs with --dev: every node may take floor
	// work, unconfined when the node has no sandbox.
	Dev bool `json:"dev,omitempty"`
	// Source is who started it: "person", "app" or "hook:<name>".
	Source string `json:"source,omitempty"`
	// ClaimTimeout is how long the job waits for a node; 0 is
	// DefaultClaimTimeout.
	ClaimTimeout time.Duration `json:"claim_timeout,omitempty"`
	// RunTimeout bounds the run on the node; 0 is DefaultRunTimeout.
	RunTimeout time.Duration `json:"run_timeout,omitempty"`
	// Agent names the agent the job acts for, so `airlock kill --agent`
	// stops every job of it at once; "" is none.
	Agent string `json:"agent,omitempty"`
	// Idempotent is the starter's word that running the job twice does no
	// harm. Only such a job is ever run again (Retries times at most) when
	// its node is lost mid-run; any other runs at most once.
	Idempotent bool `json:"idempotent,omitempty"`
	Retries    int  `json:"retries,omitempty"`
	// MaxWall and MaxMemory are the server's ceilings on the job's wall
	// time and memory (0: none): the node narrows the job's policy to
	// them, so no policy a job carries raises them. Only the server sets
	// them; a start request cannot.
	MaxWall   time.Duration `json:"max_wall,omitempty"`
	MaxMemory int64         `json:"max_memory,omitempty"`
	// Tenant is whose job it is: the server sets it from the operator
	// token that started the job, never from the request. The job holds
	// a slot of its pool's and its tenant's quotas while it runs; "" (a
	// job started around the API) holds none.
	Tenant string `json:"tenant,omitempty"`
	// QuotaFree is the server's word, when it started the job, that no
	// quota of its configuration then (--pool-quota, --tenant-quota, or
	// one of *) named the job's pool or tenant: the workflow takes no
	// slot. It rides in the workflow's input, so a replay reads it as it
	// was. Only jobs.Client.Start sets it (from the quotas its
	// orchestration holds), overriding whatever the job said; a job
	// without it takes its slot as before.
	QuotaFree bool `json:"quota_free,omitempty"`
	// Calls are the job's calls, run in order through one kernel on the
	// node that claimed the job; empty is the one call Argv or Command
	// names (see JobCalls). A job's later calls do not run after one
	// failed, unless the job is Open.
	Calls []Call `json:"calls,omitempty"`
	// Open makes the job a lease: after its calls it waits for more
	// (SignalCall) until it is released (SignalRelease) or idle for
	// IdleTimeout (0 is DefaultIdleTimeout).
	Open        bool          `json:"open,omitempty"`
	IdleTimeout time.Duration `json:"idle_timeout,omitempty"`
	// MCP are the job's MCP servers, by name: each one's stdio command,
	// started in a box of the job's kernel on the first tool call that
	// names it and kept for the job's life. Its tools are decided by the
	// job's policy as NAME.tool.
	MCP map[string][]string `json:"mcp,omitempty"`
}

// MaxMCPServers bounds a job's MCP servers.
const MaxMCPServers = 16

// validateMCP refuses a job's MCP server with a bad name or no command.
func (j Job) validateMCP() error {
	if len(j.MCP) > MaxMCPServers {
		return errs.Invalidf("job %s: mcp: %d servers, at most %d", j.ID, len(j.MCP), MaxMCPServers)
	}
	for name, argv := range j.MCP {
		if err := CheckName("mcp server", name); err != nil {
			return errs.Invalidf("job %s: mcp: %s", j.ID, errs.AgentMessage(err))
		}
		if len(argv) == 0 || argv[0] == "" {
			return errs.Invalidf("job %s: mcp: server %s: empty command (give the server's argv)", j.ID, name)
		}
	}
	return nil
}

// MaxRetries bounds a job's retries after lost nodes.
const MaxRetries = 10

// Floor is the lowest sandbox tier that may run the job. Every command can
// start a shell (a program may exec one whatever its name), so every job
// is floor work, tier 1, unless a person or app that started it from inside
// consented to tier 0; a tainted job is tier 1 whatever it says.
func (j Job) Floor() int {
	if j.Tier0 && !j.Tainted {
		return 0
	}
	return 1
}

// FromOutside says an outside event started the job.
func (j Job) FromOutside() bool { return strings.HasPrefix(j.Source, "hook:") }

// Queue is the task queue the job's claim waits on.
func (j Job) Queue() string {
	if j.Floor() >= 1 {
		return FloorQueue(j.Pool)
	}
	return PoolQueue(j.Pool)
}

// PoolQueue is the queue every node of pool polls.
func PoolQueue(pool string) string { return pool }

// FloorQueue is the queue only the pool's nodes with sandbox tier 1 poll.
func FloorQueue(pool string) string { return "floor." + pool }

// Tier2Queue is the queue only the pool's nodes with sandbox tier 2 poll.
func Tier2Queue(pool string) string { return "tier2." + pool }

// NodeQueue is the node's own queue, where the jobs it claimed run.
func NodeQueue(id string) string { return "node." + id }

// namePattern is what a pool, node or job id may be: it is part of a task
// queue's name and of paths on the node, so nothing that could spell a
// different queue (a dot) or a path (a slash) is accepted.
// It is compiled on first use, not at every airlock start.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

// CheckName refuses a pool, node or job id that is not a plain name.
func CheckName(what, name string) error {
	if !namePattern().MatchString(name) {
		return errs.Invalidf("%s %q: want lower-case letters, digits, '-' and '_', at most 63, starting with a letter or digit", what, name)
	}
	return nil
}

// Validate refuses a job that could not be routed or run.
func (j Job) Validate() error {
	if err := CheckName("job id", j.ID); err != nil {
		return err
	}
	if err := CheckName("pool", j.Pool); err != nil {
		return err
	}
	if err := j.validateMCP(); err != nil {
		return err
	}
	if err := j.validateCalls(); err != nil {
		return err
	}
	switch {
	case len(j.Argv) == 0 && j.Command == "" && len(j.Calls) == 0 && !j.Open:
		return errs.Invalidf("job %s: no command", j.ID)
	case len(j.Argv) > 0 && j.Command != "":
		return errs.Invalidf("job %s: both a command and a shell string", j.ID)
	}
	switch j.Mode {
	case "", "observe", "fix":
	default:
		return errs.Invalidf("job %s: mode %q: want observe or fix", j.ID, j.Mode)
	}
	if j.ClaimTimeout < 0 || j.RunTimeout < 0 || j.MaxWall < 0 || j.MaxMemory < 0 {
		return errs.Invalidf("job %s: a negative timeout or ceiling", j.ID)
	}
	if j.Tenant != "" {
		if err := CheckName("tenant", j.Tenant); err != nil {
			return err
		}
	}
	if j.Agent != "" {
		if err := CheckName("agent", j.Agent); err != nil {
			return err
		}
	}
	switch {
	case j.Retries < 0 || j.Retries > MaxRetries:
		return errs.Invalidf("job %s: retries %d: want 0 to %d", j.ID, j.Retries, MaxRetries)
	case j.Retries > 0 && !j.Idempotent:
		return errs.Invalidf("job %s: retries %d on a job not marked idempotent: a lost node's job runs again only when running it twice does no harm (mark it idempotent, or drop the retries)", j.ID, j.Retries)
	}
	return nil
}

// Summary is what a job's list entry shows of it, kept in its workflow's
// memo so the list is read back from Temporal after a server restart.
type Summary struct {
	Pool  string `json:"pool,omitempty"`
	Queue string `json:"queue,omitempty"`
	Floor int    `json:"floor"`
	// OutsideEvent says an outside event started the job; Tainted and
	// Taint whether and why it is tainted.
	OutsideEvent bool   `json:"outside_event"`
	Tainted      bool   `json:"tainted"`
	Taint        string `json:"taint,omitempty"`
	Model        string `json:"model,omitempty"`
	Parent       string `json:"parent,omitempty"`
	// Dev says the server ran --dev when the job started.
	Dev        bool   `json:"dev,omitempty"`
	Source     string `json:"source,omitempty"`
	Command    string `json:"command,omitempty"`
	Agent      string `json:"agent,omitempty"`
	Idempotent bool   `json:"idempotent,omitempty"`
	Retries    int    `json:"retries,omitempty"`
	// Tenant is whose job it is (the token that started it).
	Tenant string `json:"tenant,omitempty"`
	// Calls counts the calls the job was started with; Open says it takes
	// more (a lease).
	Calls int  `json:"calls,omitempty"`
	Open  bool `json:"open,omitempty"`
	// QuotaFree is the job's QuotaFree as it was started: a server that
	// starts again under a quota bounding the job counts it while it runs
	// (it holds no slot its quota would see).
	QuotaFree bool `json:"quota_free,omitempty"`
	// MCP names the job's MCP servers (their commands are not shown).
	MCP []string `json:"mcp,omitempty"`
}

// Summary is the job's list entry.
func (j Job) Summary() Summary {
	return Summary{Pool: j.Pool, Queue: j.Queue(), Floor: j.Floor(), OutsideEvent: j.FromOutside(), Tainted: j.Tainted,
		Taint: j.Taint, Model: j.Model, Parent: j.Parent, Dev: j.Dev, Source: j.Source,
		Command: j.Describe(), Agent: j.Agent, Idempotent: j.Idempotent, Retries: j.Retries,
		Calls: len(j.JobCalls()), Open: j.Open, Tenant: j.Tenant, QuotaFree: j.QuotaFree, MCP: slices.Sorted(maps.Keys(j.MCP))}
}

// Claim is a node's answer to a claim: who it is and the tier it runs at.
type Claim struct {
	Node string `json:"node"`
	Tier int    `json:"tier"`
	// OptedOut says an admin's sandbox opt-out holds for the node: it may
	// take floor work started from inside, never tainted work, and what
	// runs there is marked tier 0.
	OptedOut bool `json:"opted_out,omitempty"`
}

// ClaimRequest is what a claim asks of a node.
type ClaimRequest struct {
	Job   string `json:"job"`
	Floor int    `json:"floor"`
	// Tainted is the job's taint: an opted-out node refuses tainted work.
	Tainted bool `json:"tainted,omitempty"`
	// Dev says the server lets every node take floor work.
	Dev bool `json:"dev,omitempty"`
}

// Accepts says whether c may run j: at or above the job's floor, or below
// it only on the server's --dev, or on a node an admin opted out for a job
// started from inside that no taint reached. A tainted job never runs on
// an opted-out node, whatever its tier.
func (j Job) Accepts(c Claim) error {
	switch {
	case c.OptedOut && j.Tainted:
		return fmt.Errorf("node %s is opted out of the sandbox and job %s is tainted (%s): refused, tainted work runs only on a confined node", c.Node, j.ID, j.Taint)
	case c.Tier >= j.Floor(), j.Dev, c.OptedOut:
		return nil
	}
	return fmt.Errorf("node %s at sandbox tier %d claimed job %s, whose floor is tier %d: refused, the job never runs below its floor", c.Node, c.Tier, j.ID, j.Floor())
}

// RunRequest is the run a claiming node is handed.
type RunRequest struct {
	Job  Job    `json:"job"`
	Node string `json:"node"`
}

// Result is how a job ended on its node.
type Result struct {
	Node string `json:"node"`
	// Tier is the tier the node ran the job at: of a job of calls, the
	// lowest tier any of them ran at.
	Tier     int    `json:"tier"`
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	// OptedOut says the run took place on a node under a sandbox opt-out:
	// every call of it counts as tier 0 (Tier is then 0).
	OptedOut bool `json:"opted_out,omitempty"`
	// Truncated says output beyond OutputCap was left out.
	Truncated bool `json:"truncated,omitempty"`
	// Refused says the node's kernel denied the call; Reason says why,
	// as an agent may read it.
	Refused bool   `json:"refused,omitempty"`
	Verdict string `json:"verdict,omitempty"`
	Decider string `json:"decider,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Calls are the results of the job's calls, in order (their output
	// held to ResultCap together); the fields above are then the last
	// call's, but Tier, the lowest tier any call ran at, and OptedOut,
	// set when any call ran under an opt-out.
	Calls []CallResult `json:"calls,omitempty"`
}

// OutputCap bounds each of a job's kept streams: the result travels in
// the workflow's history, whose payloads the server caps.
const OutputCap = 256 << 10

// Describe is the job's command as one line for lists.
func (j Job) Describe() string {
	if j.Command != "" {
		return j.Command
	}
	if len(j.Argv) > 0 || len(j.Calls) == 0 {
		return strings.Join(j.Argv, " ")
	}
	s := j.Calls[0].Kind + " " + j.Calls[0].Describe()
	if n := len(j.Calls); n > 1 {
		s += fmt.Sprintf(" (+%d calls)", n-1)
	}
	return s
}
