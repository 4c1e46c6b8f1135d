// Package mediator is airlock's kernel loop, in one place for every front
// end. Every call an agent asks for — a command, a shell string, a file read,
// write, listing or search, a connection, a tool call, a read of an
// offloaded result — comes here: it is decided against the policy (narrowed
// for the call when the call carries a narrower one), put to a person when
// the policy says escalate, checked against airlock's private state,
// confined in the box only this package builds, run, fitted or offloaded,
// and recorded:
//
//	front end ──Call──▶ Decide ──▶ escalate ──▶ private-state check ──▶ box (tier resolved once)
//	                                                                     │ run (runner)
//	                                                                     ▼
//	           ◀──Outcome/text── fit / offload ◀──────────── output ◀────┘   every step recorded
//
// Front ends (internal/cli, mcp/serve, mcp/gateway, the jobs worker) import
// it and translate their transport's messages into Calls; none of them
// builds a box or runs a process. It never starts a process itself: running
// goes through runner, confinement through sandbox.
package mediator

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// Kind is what a call asks to do.
type Kind string

// Kinds of call.
const (
	KindExec   Kind = "exec"      // run Argv
	KindShell  Kind = "shell"     // run a shell string
	KindRead   Kind = "fs.read"   // read Path
	KindWrite  Kind = "fs.write"  // write Path
	KindNet    Kind = "net"       // connect to Host:Port
	KindTool   Kind = "tool"      // call Tool with Args
	KindList   Kind = "fs.list"   // list the directory Path
	KindSearch Kind = "fs.search" // search files under Path for Pattern
	// KindReadResult reads part of an offloaded result (Args as read_result
	// takes them), decided as a call of the tool read_result.
	KindReadResult Kind = "read_result"
)

// Call is one request of an agent. Only the fields of its Kind are read.
type Call struct {
	Kind    Kind           `json:"kind"`
	Argv    []string       `json:"argv,omitempty"`
	Command string         `json:"command,omitempty"`
	Path    string         `json:"path,omitempty"`
	Host    string         `json:"host,omitempty"`
	Port    int            `json:"port,omitempty"`
	Tool    string         `json:"tool,omitempty"`
	Args    map[string]any `json:"args,omitempty"`
	// Pattern is what a search looks for (an extended regular expression).
	Pattern string `json:"pattern,omitempty"`
	// Content is what a write puts in the file; it is decided and
	// recorded by its SHA-256, which the kernel fills in.
	Content       *string `json:"-"`
	ContentSHA256 string  `json:"content_sha256,omitempty"`
	// ReadOnly says the tool's definition (as pinned) annotates it
	// read-only: in a tainted job it may go ahead as the policy says,
	// where any other tool call waits for a person.
	ReadOnly bool `json:"read_only,omitempty"`
	// Narrow, when set, is a narrower policy for this call alone: the call is
	// decided against the intersection of it and the kernel's policy, which
	// can only restrict, and nothing of it outlives the call.
	Narrow *policy.Policy `json:"-"`
}

// Digest is the SHA-256 of the call's canonical JSON, the key under which
// the audit log and the approvals refer to it.
func (c Call) Digest() string {
	b, err := json.Marshal(c) // maps marshal with sorted keys
	if err != nil {
		b = []byte(fmt.Sprintf("%#v", c))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Answer is what a person (or the lack of one) said to an escalation.
type Answer uint8

// Answers. The zero value is AnswerError so a reply that was never filled in
// denies.
const (
	AnswerError Answer = iota
	AnswerAllowOnce
	AnswerAllowAlways
	AnswerDeny
	AnswerTimeout
	// AnswerPending: the question was handed to a person who answers
	// later, on a new call (an MCP client's round trip). This call is
	// refused, recorded as "pending", not as an error.
	AnswerPending
)

var answerNames = [...]string{"error", "allow-once", "allow-always", "deny", "timeout", "pending"}

func (a Answer) String() string {
	if int(a) < len(answerNames) {
		return answerNames[a]
	}
	return fmt.Sprintf("answer(%d)", a)
}

// Escalation is a call put to a person.
type Escalation struct {
	Call     Call
	Decision policy.Decision
	// Grant is the rule "allow always" would save, shown verbatim to the
	// person before it is saved; nil when no rule may be saved for this call
	// (an interpreter running code it was handed, say).
	Grant *policy.Grant
	// NoGrant says why "allow always" is not offered when Grant is nil.
	NoGrant string
	Timeout time.Duration
}

// Digest is the SHA-256 of what the person is asked, exactly: the call,
// the decision and the grant "allow always" would save. An answer given
// for one escalation names its digest, so it is never applied to another.
func (e Escalation) Digest() string {
	b, err := json.Marshal(struct {
		Call     string          `json:"call"`
		Decision policy.Decision `json:"decision"`
		Grant    *policy.Grant   `json:"grant,omitempty"`
		Timeout  time.Duration   `json:"timeout"`
	}{e.Call.Digest(), e.Decision, e.Grant, e.Timeout})
	if err != nil {
		b = []byte(fmt.Sprintf("%#v", e))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Reply is a person's answer, or why there was none.
type Reply struct {
	Answer Answer
	// Decider names who answered: "person:<name>", "timeout", "error".
	Decider string
	Err     error
	// Grant is the rule saved when the answer is AnswerAllowAlways; the
	// kernel adds it to the policy in force so the same call stops asking.
	Grant *policy.Grant
}

// Approver puts escalations to a person. It must return when ctx ends or the
// escalation's timeout passes, with AnswerTimeout.
type Approver interface {
	Ask(ctx context.Context, e Escalation) Reply
}

type approverKey struct{}

// WithApprover returns a context whose escalations go to a instead of the
// kernel's own approver: the MCP gateway asks the client itself (elicitation)
// when it can. The timeout, the recording and fail-closed handling are the
// kernel's as for any escalation.
func WithApprover(ctx context.Context, a Approver) context.Context {
	return context.WithValue(ctx, approverKey{}, a)
}

func (k *Kernel) approverFor(ctx context.Context) Approver {
	if a, ok := ctx.Value(approverKey{}).(Approver); ok && a != nil {
		return a
	}
	return k.approver
}

// Record is one decision, run or connection as the audit log keeps it.
type Record struct {
	// Kind is "decision" (the zero value), "run" or "egress".
	Kind       string
	Time       time.Time
	CallDigest string
	Call       Call
	Verdict    policy.Verdict
	Rule       string
	Reason     string
	Decider    string
	Category   policy.Category
	// Fields holds what a kind adds: a run's exit code and Description, a
	// connection's bytes and addresses.
	Fields map[string]any
}

// Recorder keeps decision records. An error from it fails the call: a
// decision that could not be recorded does not go ahead.
type Recorder interface {
	Record(ctx context.Context, r Record) error
}

// Kernel decides calls. Build it with New; it is safe for concurrent use.
type Kernel struct {
	world policy.World
	// Approver is asked about escalations. Nil means nobody can answer: an
	// escalation is denied at once and recorded as a timeout.
	approver Approver
	// Recorder receives a record of every decision; nil keeps none (for
	// library users who audit elsewhere).
	recorder Recorder
	now      func() time.Time
	timeout  time.Duration
	private  []string
	run      runConfig
	tier     func() (sandbox.Tier, error)
	// gvisorTier is tier 2 for a policy with `isolation: gvisor`,
	// resolved once, under the kernel's caches.
	gvisorTier func() (sandbox.Tier, error)
	// afterDecide runs between a file call's decision and its execution
	// (tests only: the window an attacker swapping a path for a link uses).
	afterDecide func(Call)
	// taint says why the calls' caller read text from outside; "" is
	// untainted. See Options.Taint and MarkTainted.
	taint func() string
	// tracksTaint: Options.Taint was given, so ReadOutside taints.
	tracksTaint bool
	// marked is the reason MarkTainted gave; nil until then.
	marked atomic.Pointer[string]
	// egressRoots verify intercepted hosts in tests; nil (always, outside
	// tests) is the system's roots.
	egressRoots *x509.CertPool
	// egressModels replaces the model providers' endpoints in tests; nil
	// (always, outside tests) is the real providers'.
	egressModels map[string]egress.Provider
	// modelTokens counts the model tokens this kernel's boxes spent: the
	// run's (a node job's, a session's) limits.model_tokens budget.
	modelTokens atomic.Int64
	// modelHeld is what the model requests in flight may still spend,
	// shared like modelTokens.
	modelHeld egress.Reservations

	mu      sync.RWMutex
	policy  *policy.Policy
	checker *policy.Checker
}

// Options configure a Kernel. Every field may be left zero.
type Options struct {
	Approver Approver
	Recorder Recorder
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Private are airlock's own files and directories (the grants file,
	// the audit log, the approvals socket): a box may never write them, or
	// an agent could approve its own calls or rewrite the evidence. A
	// policy whose writes reach one of them is refused at run time.
	Private []string

	// Tier is the sandbox tier calls run at. sandbox.TierAuto is the best
	// the host gives, found once for the kernel; a host that gives no
	// confinement is then an error, never a silent tier 0. The policy's
	// `isolation: none` runs at tier 0, announced through Warn.
	Tier sandbox.Tier
	// Exe is the airlock binary that runs as the box's init; "" refuses
	// every call that needs a box.
	Exe string
	// Environ is the caller's environment; only the names the policy's
	// env.allow admits reach a box.
	Environ []string
	// Warn receives announcements a person must see (an unconfined run);
	// nil discards them.
	Warn func(string)
	// OutputCap bounds what one call's programs may write (stdout and
	// stderr together) when a front end keeps the output; 0 is
	// DefaultOutputCap.
	OutputCap int64
	// Offloader keeps results too heavy for a model in the file store, in
	// Scope; nil keeps every result inline (MaxResult still holds) and
	// read_result finds nothing.
	Offloader *offload.Offloader
	Scope     files.Scope
	// AfterDecide, for tests, runs between a file call's decision and its
	// execution; nil (always, outside tests) runs nothing.
	AfterDecide func(Call)
	// Caches are the kernel's host caches (sandbox.NewCaches: the probe's
	// readings, the box's /etc views, and the paths its boxes may write
	// or were let write, which they are weighed against); every box the
	// kernel plans carries them. Nil keeps none across runs.
	Caches *sandbox.Caches
	// Taint, when it returns a reason, says the caller has read text from
	// outside (a fleet job an outside event started, say): every call
	// that can send data out — a connection, a tool not annotated
	// read-only — then waits for a person even where the policy allows
	// it, and the record says why. Nil is untainted.
	Taint func() string
}

// runConfig is how the kernel runs and finishes what it allowed.
type runConfig struct {
	exe       string
	environ   []string
	warn      func(string)
	outputCap int64
	offloader *offload.Offloader
	scope     files.Scope
	caches    *sandbox.Caches
}

// DefaultOutputCap bounds what one call's programs may write when a front
// end keeps the output. It is a little over MaxResult, so that a result too
// big to return is seen as such and refused with a request for less, rather
// than cut silently.
const DefaultOutputCap = offload.MaxResult + 1<<20

// DefaultEscalationTimeout is how long an escalation waits for a person when
// the policy names no timeout.
const DefaultEscalationTimeout = 30 * time.Second

// New compiles p for world. An invalid policy is an error: nothing is
// decided, so nothing runs.
func New(p *policy.Policy, world policy.World, o Options) (*Kernel, error) {
	if p == nil {
		return nil, errs.Invalidf("mediator: no policy (use policy.Workspace() for the default)")
	}
	c, err := p.Compile(world)
	if err != nil {
		return nil, err
	}
	k := &Kernel{world: world, approver: o.Approver, recorder: o.Recorder,
		now: o.Now, policy: p, checker: c, private: o.Private,
		run: runConfig{exe: o.Exe, environ: o.Environ, warn: o.Warn, outputCap: o.OutputCap,
			offloader: o.Offloader, scope: o.Scope, caches: o.Caches},
		tier: resolveOnce(o.Tier, o.Caches), gvisorTier: gvisorOnce(o.Caches), afterDecide: o.AfterDecide, taint: o.Taint}
	given := o.Taint
	k.tracksTaint = given != nil
	if given == nil {
		given = func() string { return "" }
	}
	k.taint = func() string {
		if m := k.marked.Load(); m != nil {
			return joinReasons(given(), *m)
		}
		return given()
	}
	if k.now == nil {
		k.now = time.Now
	}
	if k.run.outputCap <= 0 {
		k.run.outputCap = DefaultOutputCap
	}
	if k.run.warn == nil {
		k.run.warn = func(string) {}
	}
	k.timeout = p.Escalation.Timeout
	if k.timeout <= 0 {
		k.timeout = DefaultEscalationTimeout
	}
	if o.Tier != sandbox.Tier0 {
		// The host's probe answers every call the same way and decides
		// nothing alone: run it now, beside the rest of the start (the
		// front end's wiring, the decision and its record), so the first
		// box finds the tier resolved. A call that needs it waits for it.
		go k.tier()
	}
	return k, nil
}

// Policy returns the policy in force, grants included.
func (k *Kernel) Policy() *policy.Policy {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.policy
}

// Outcome is how a call was decided.
type Outcome struct {
	Decision policy.Decision `json:"decision"`
	// Decider is "policy", "grant", "person:<name>", "timeout" or "error".
	Decider string `json:"decider"`
	// Commands holds, for a shell call, the decision of every simple
	// command the string would run.
	Commands []policy.CommandDecision `json:"commands,omitempty"`
	// Cause is why an approval could not be obtained (decider "error");
	// it is recorded, never shown to the agent.
	Cause error `json:"-"`
}

// decideFront decides a call a front end made for one of its tools: when
// the policy names that tool under `tools` (so `tools: {exec: false}`
// switches exec off, and an escalate there asks a person for every call),
// it is decided as a call of the tool with the call's arguments first; a
// tool the policy does not name is decided by what it does alone.
func (k *Kernel) decideFront(ctx context.Context, call Call) (Outcome, error) {
	if call.Tool != "" && call.Kind != KindTool && call.Kind != KindReadResult {
		if _, named := k.Policy().Tools[call.Tool]; named {
			tc := Call{Kind: KindTool, Tool: call.Tool, Args: call.Args, Narrow: call.Narrow}
			if out, err := k.Decide(ctx, tc); err != nil {
				return out, err
			}
		}
	}
	return k.Decide(ctx, call)
}

// Decide decides call. It returns a nil error when the call may go ahead and
// a *errs.Denial (class Denied) when it may not; any other error (a record
// that could not be written) also means the call must not go ahead.
func (k *Kernel) Decide(ctx context.Context, call Call) (Outcome, error) {
	out, err := k.decide(call)
	if err != nil {
		out = Outcome{Decision: policy.Decision{Verdict: policy.Deny, Category: categoryOf(call),
			Rule: "error", Reason: "the call could not be decided"}, Decider: "error"}
		if rerr := k.recordDecision(ctx, call, out); rerr != nil {
			return out, rerr
		}
		// A call that cannot be decided (no argv, an unknown kind) is a bad
		// call, not a refusal: the caller reads its class (invalid), so an
		// agent fixes the call instead of taking it as POLICY_DENIED.
		return out, err
	}
	if why := k.taint(); why != "" && out.Decision.Verdict == policy.Allow && sendsOut(call) {
		out = k.ask(ctx, call, tainted(out, why), "a tainted job's call that can send data out is decided each time")
	} else if out.Decision.Verdict == policy.Escalate {
		out = k.escalate(ctx, call, out)
	}
	if err := k.recordDecision(ctx, call, out); err != nil {
		return out, err
	}
	return out, denial(out)
}

// MarkTainted taints the kernel's caller from now on, for why (a front
// end read a result of a tool marked open-world, say): every later call
// that can send data out waits for a person. A taint is never lifted.
func (k *Kernel) MarkTainted(why string) {
	if why == "" {
		why = "it read text from outside"
	}
	for {
		old := k.marked.Load()
		next := why
		if old != nil {
			next = joinReasons(*old, why)
		}
		if k.marked.CompareAndSwap(old, &next) {
			return
		}
	}
}

// ReadOutside taints the kernel, as MarkTainted, when it tracks taint (its
// Options.Taint was given: a fleet job); a kernel that does not (a
// session on one machine, its person at hand) is left as it is.
func (k *Kernel) ReadOutside(why string) {
	if k.tracksTaint {
		k.MarkTainted(why)
	}
}

func joinReasons(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// sendsOut says whether call can carry data off the machine: a
// connection, or a tool whose definition is not annotated read-only.
// Commands reach the network only through the egress proxy, whose every
// connection is decided as a net call.
func sendsOut(call Call) bool {
	switch call.Kind {
	case KindNet:
		return true
	case KindTool:
		return !call.ReadOnly
	}
	return false
}

// tainted turns an allow into the escalation a tainted caller's call
// waits on, keeping the rule that allowed it in the reason.
func tainted(out Outcome, why string) Outcome {
	d := out.Decision
	d.Verdict = policy.Escalate
	d.Reason = fmt.Sprintf("the job is tainted (%s): a call that can send data out waits for a person, though %s allows it", why, nonEmpty(d.Rule, "the policy"))
	d.Rule = "taint"
	out.Decision, out.Decider = d, "policy"
	return out
}

func (k *Kernel) decide(call Call) (Outcome, error) {
	k.mu.RLock()
	c, p := k.checker, k.policy
	k.mu.RUnlock()
	if call.Narrow != nil {
		nc, err := p.Narrow(call.Narrow).Compile(k.world)
		if err != nil {
			return Outcome{}, fmt.Errorf("narrowed policy: %w", err)
		}
		c = nc
	}
	out := Outcome{Decider: "policy"}
	switch call.Kind {
	case KindExec:
		if len(call.Argv) == 0 {
			return out, errs.Invalidf("exec: empty argv")
		}
		out.Decision = c.Argv(call.Argv)
	case KindShell:
		sd := c.Shell(call.Command)
		out.Decision, out.Commands = sd.Overall, sd.Commands
	case KindRead, KindList, KindSearch:
		out.Decision = c.Path(policy.Read, call.Path)
	case KindWrite:
		out.Decision = c.Path(policy.Write, call.Path)
	case KindNet:
		out.Decision = c.Net(call.Host, call.Port)
	case KindTool:
		out.Decision = c.Tool(call.Tool, call.Args)
	case KindReadResult:
		// Reading back a result this kernel kept is airlock's own tool:
		// the text came from a call that was allowed. A policy that names
		// read_result under tools decides it as that tool.
		out.Decision = policy.Decision{Verdict: policy.Allow, Category: policy.CatTools, Rule: "read_result"}
		if _, named := p.Tools[ReadResultTool]; named {
			out.Decision = c.Tool(ReadResultTool, call.Args)
		}
	default:
		return out, errs.Invalidf("unknown call kind %q", call.Kind)
	}
	if isGrantRule(out.Decision.Rule) {
		out.Decider = "grant"
	}
	return out, nil
}

func isGrantRule(rule string) bool { return strings.HasPrefix(rule, "grants[") }

// escalate puts the call to a person and turns the reply into an outcome.
// Every path that is not an explicit allow denies.
func (k *Kernel) escalate(ctx context.Context, call Call, out Outcome) Outcome {
	e := Escalation{}
	if strings.HasPrefix(out.Decision.Rule, "builtin.") {
		// A built-in rule guards against catastrophe in any context; a
		// grant never lifts it, so "always" is not offered.
		return k.ask(ctx, call, out, "a built-in safety rule asked; it is decided each time")
	} else if g, err := grantFor(call, k.now()); err == nil {
		e.Grant = &g
	} else {
		e.NoGrant = err.Error()
	}
	return k.askWith(ctx, call, out, e)
}

// ask puts call to a person without offering "allow always" (noGrant says
// why).
func (k *Kernel) ask(ctx context.Context, call Call, out Outcome, noGrant string) Outcome {
	return k.askWith(ctx, call, out, Escalation{NoGrant: noGrant})
}

// askWith puts e (its call, decision and timeout filled in here) to the
// approver and turns the reply into an outcome. Every path that is not an
// explicit allow denies.
func (k *Kernel) askWith(ctx context.Context, call Call, out Outcome, e Escalation) Outcome {
	denied := func(decider, why string) Outcome {
		d := out.Decision
		d.Verdict, d.Reason = policy.Deny, why
		if out.Decision.Reason != "" {
			d.Reason = strings.TrimSuffix(out.Decision.Reason, ".") + ": " + why
		}
		return Outcome{Decision: d, Decider: decider, Commands: out.Commands}
	}
	approver := k.approverFor(ctx)
	if approver == nil {
		return denied("timeout", "nobody was there to approve it")
	}
	e.Call, e.Decision, e.Timeout = call, out.Decision, k.timeout
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	r := approver.Ask(ctx, e)
	switch r.Answer {
	case AnswerAllowOnce, AnswerAllowAlways:
		if r.Answer == AnswerAllowAlways && r.Grant != nil {
			if err := k.addGrant(*r.Grant); err != nil {
				// Never an "always" that silently does not hold: the
				// call is refused with the reason, which the person reads.
				return denied("error", "the allow-always grant cannot be applied ("+errs.AgentMessage(err)+"); answer allow-once instead")
			}
		}
		d := out.Decision
		d.Verdict = policy.Allow
		return Outcome{Decision: d, Decider: nonEmpty(r.Decider, "person"), Commands: out.Commands}
	case AnswerDeny:
		return denied(nonEmpty(r.Decider, "person"), "a person refused the call")
	case AnswerTimeout:
		return denied("timeout", fmt.Sprintf("no approval came within %s", k.timeout))
	case AnswerPending:
		return denied("pending", "it waits for a person's answer")
	default:
		o := denied("error", "the approval could not be obtained")
		o.Cause = r.Err
		return o
	}
}

// addGrant lifts the escalation for g from now on. A grant the Checker
// would ignore (ValidateGrant refuses it) or a policy that no longer
// compiles with it is an error, never a grant that silently does nothing.
func (k *Kernel) addGrant(g policy.Grant) error {
	if err := policy.ValidateGrant(g); err != nil {
		return errs.Invalidf("%v", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.policy.WithGrants([]policy.Grant{g})
	c, err := p.Compile(k.world)
	if err != nil {
		return fmt.Errorf("compile the policy with the grant: %w", err)
	}
	k.policy, k.checker = p, c
	return nil
}

// grantFor is the rule "allow always" would save for call. Only an argv or
// a tool call has one: a shell string is many programs, a path or a host is
// better granted in the policy file where a person reads it.
func grantFor(call Call, now time.Time) (policy.Grant, error) {
	switch call.Kind {
	case KindExec:
		return policy.GrantFor(policy.Call{Argv: call.Argv}, now)
	case KindTool:
		return policy.GrantFor(policy.Call{Tool: call.Tool, Args: call.Args}, now)
	}
	return policy.Grant{}, errs.Invalidf("no grant form for a %s call", call.Kind)
}

func (k *Kernel) recordDecision(ctx context.Context, call Call, out Outcome) error {
	r := Record{Kind: "decision", Time: k.now(), CallDigest: call.Digest(), Call: call, Verdict: out.Decision.Verdict,
		Rule: out.Decision.Rule, Reason: out.Decision.Reason, Decider: out.Decider, Category: out.Decision.Category}
	if out.Cause != nil {
		r.Fields = map[string]any{"error": out.Cause.Error()}
	}
	return k.record(ctx, r)
}

func (k *Kernel) record(ctx context.Context, r Record) error {
	if k.recorder == nil {
		return nil
	}
	if err := k.recorder.Record(ctx, r); err != nil {
		return errs.Wrap(errs.Unavailable, err, "audit: the record could not be written, so the call does not go ahead")
	}
	return nil
}

// denial turns a non-allow outcome into the error the agent reads.
func denial(out Outcome) error {
	if out.Decision.Verdict == policy.Allow {
		return nil
	}
	code := errs.CodePolicyDenied
	switch out.Decider {
	case "timeout":
		code = errs.CodeEscalationTimeout
	case "error":
		code = errs.CodeEscalationError
	case "pending":
		code = errs.CodeEscalationPending
	}
	return &errs.Denial{Code: code, Category: string(out.Decision.Category), Reason: out.Decision.Reason}
}

func categoryOf(call Call) policy.Category {
	switch call.Kind {
	case KindExec, KindShell:
		return policy.CatShell
	case KindRead, KindWrite, KindList, KindSearch:
		return policy.CatFS
	case KindNet:
		return policy.CatNet
	}
	return policy.CatTools
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
