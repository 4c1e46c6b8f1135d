// Package mediator is airlock's kernel loop. Every call an agent asks for —
// a command, a shell string, a file read or write, a connection, a tool call —
// comes here first: it is decided against the policy (narrowed for the call
// when the call carries a narrower one), put to a person when the policy says
// escalate, recorded, and only then handed to the part that acts on it.
//
// The CLI, the daemon wiring and the mcp package import it. It never starts a
// process itself: running goes through runner, confinement through sandbox.
package mediator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/policy"
)

// Kind is what a call asks to do.
type Kind string

// Kinds of call.
const (
	KindExec  Kind = "exec"     // run Argv
	KindShell Kind = "shell"    // run a shell string
	KindRead  Kind = "fs.read"  // read Path
	KindWrite Kind = "fs.write" // write Path
	KindNet   Kind = "net"      // connect to Host:Port
	KindTool  Kind = "tool"     // call Tool with Args
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
}

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
		now: o.Now, policy: p, checker: c, private: o.Private}
	if k.now == nil {
		k.now = time.Now
	}
	k.timeout = p.Escalation.Timeout
	if k.timeout <= 0 {
		k.timeout = DefaultEscalationTimeout
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
	if out.Decision.Verdict == policy.Escalate {
		out = k.escalate(ctx, call, out)
	}
	if err := k.recordDecision(ctx, call, out); err != nil {
		return out, err
	}
	return out, denial(out)
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
	case KindRead:
		out.Decision = c.Path(policy.Read, call.Path)
	case KindWrite:
		out.Decision = c.Path(policy.Write, call.Path)
	case KindNet:
		out.Decision = c.Net(call.Host, call.Port)
	case KindTool:
		out.Decision = c.Tool(call.Tool, call.Args)
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
	e := Escalation{Call: call, Decision: out.Decision, Timeout: k.timeout}
	if strings.HasPrefix(out.Decision.Rule, "builtin.") {
		// A built-in rule guards against catastrophe in any context; a
		// grant never lifts it, so "always" is not offered.
		e.NoGrant = "a built-in safety rule asked; it is decided each time"
	} else if g, err := grantFor(call, k.now()); err == nil {
		e.Grant = &g
	} else {
		e.NoGrant = err.Error()
	}
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
		return denied("error", "the approval could not be obtained")
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
	case KindRead, KindWrite:
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
