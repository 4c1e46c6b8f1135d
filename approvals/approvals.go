// Package approvals is airlock's escalation broker: when policy says a call
// needs a person, a Broker asks one and returns the answer — allow once,
// allow always (which saves the narrowest grant to a grants file), or deny.
// Nobody answering before the timeout is a denial recorded as "timeout"; a
// malformed answer or any failure is a denial recorded as "error". Nothing
// here ever turns a failure into an allow.
//
// The program's wiring (internal/wiring) and the CLI import it; the mediator
// reaches it through its own Approver interface. It imports policy for the Grant type
// only; it decides nothing itself.
//
// # Where the question is asked
//
// A Broker asks on the controlling terminal (/dev/tty, never standard
// input, which may belong to the agent) when it has one, and at the same time
// serves a Unix socket so the question can be answered from another terminal
// with `airlock approvals list` and `airlock approvals decide`. The first
// answer wins. Every string that came from the agent is escaped before it is
// shown (see Show), so a call cannot draw a fake prompt.
//
// # The socket
//
// Each airlock process has its own socket, DIR/approvals-<pid>.sock, where
// DIR is $XDG_RUNTIME_DIR/airlock (or /tmp/airlock-<uid>). DIR must be a
// directory owned by the user with mode 0700, and each socket is 0600; both
// sides also check the other's uid with SO_PEERCRED, so only the same user
// can list or answer. The broker also refuses a peer that is not in its own
// user, mount and pid namespaces: a sandboxed process keeps the uid (its
// user namespace maps it back) and must never answer its own escalations,
// even if a policy lets it see the socket. Escalation IDs are "<pid>-<8 hex digits>": the pid
// says which socket to answer on, and the random part keeps an answer meant
// for one question from reaching another. `approvals list` asks every socket
// in DIR and removes the ones nobody listens on (their process is gone).
//
// The protocol is one JSON request line and one JSON reply line per
// connection:
//
//	client ──{"op":"list"}────────────────────────────▶ broker
//	client ◀─{"pending":[{id, call, grant text, ...}]}── broker
//	client ──{"op":"decide","id":ID,"answer":A,"grant_sha256":H}─▶ broker
//	client ◀─{"decided":A,"saved":TEXT,"file":F} | {"error":...}─ broker
//
// For allow-always the client sends the sha256 of the grant line it showed
// the person; the broker saves only if that is the line it would save.
package approvals

import (
	"fmt"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/policy"
)

// Answer is how an escalation ended.
type Answer uint8

const (
	// Error is the zero value, so an Outcome nobody filled in is a denial:
	// the answer could not be had (a malformed answer, a broken socket, a
	// grant that could not be saved, a cancelled context).
	Error Answer = iota
	// Deny is a person's explicit refusal.
	Deny
	// AllowOnce lets this one call run.
	AllowOnce
	// AllowAlways lets this call run and saves a grant so it stops asking.
	AllowAlways
	// Timeout is nobody answering in time.
	Timeout
)

var answerNames = [...]string{"error", "deny", "allow-once", "allow-always", "timeout"}

func (a Answer) String() string {
	if int(a) < len(answerNames) {
		return answerNames[a]
	}
	return fmt.Sprintf("answer(%d)", a)
}

// MarshalText writes the answer's name.
func (a Answer) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// Allowed reports whether the call may run.
func (a Answer) Allowed() bool { return a == AllowOnce || a == AllowAlways }

// ParseAnswer reads what a person typed or sent: allow-once, allow-always
// or deny (and, on a terminal, the short forms o/once, a/always, d/deny/n/no).
// Anything else is an error; the caller records that as an Error answer.
func ParseAnswer(s string) (Answer, error) {
	switch s {
	case "allow-once", "once", "o", "O":
		return AllowOnce, nil
	case "allow-always", "always", "a", "A":
		return AllowAlways, nil
	case "deny", "d", "D", "n", "N", "no":
		return Deny, nil
	}
	return Error, errs.Invalidf("answer %s is not allow-once, allow-always or deny", Show(s))
}

// Request is a call waiting for a person.
type Request struct {
	// ID names the escalation; Ask sets it ("<pid>-<random>") when empty.
	ID string `json:"id"`
	// Kind is what is asked about: "argv", "shell", "tool", "net", "fs".
	Kind string `json:"kind"`
	// Argv is the command, for argv and shell calls.
	Argv []string `json:"argv,omitempty"`
	// Command is the shell string as the agent wrote it, when there was one.
	Command string `json:"command,omitempty"`
	// Tool and Args are the tool call, for tool calls.
	Tool string         `json:"tool,omitempty"`
	Args map[string]any `json:"args,omitempty"`
	// Category is the policy section (policy.Category as a string).
	Category string `json:"category"`
	// Rule is the policy field that escalated; a person may see it.
	Rule string `json:"rule,omitempty"`
	// Reason is the one-sentence why.
	Reason string `json:"reason"`
	// Workdir is where the call would run; "" when it does not matter.
	Workdir string `json:"workdir,omitempty"`
	// Grant is what allow-always saves (policy.GrantFor's answer); nil
	// means allow-always is not offered.
	Grant *policy.Grant `json:"-"`
	// NoGrant says why allow-always is not offered (GrantFor's error).
	NoGrant string `json:"no_grant,omitempty"`
}

// Outcome is the end of one escalation.
type Outcome struct {
	Answer Answer
	// Decider is who decided, as the audit log records it:
	// "person:<name>", "timeout" or "error".
	Decider string
	// Via is where the answer came from: "terminal", "socket", or "".
	Via string
	// Grant is the grant saved for AllowAlways, and GrantsFile where.
	Grant      *policy.Grant
	GrantsFile string
	// Err explains an Error answer.
	Err error
}

// Denial returns the structured refusal the agent receives, or nil when
// the call may run. category and reason are those of the policy decision
// that escalated.
func (o Outcome) Denial(category, reason string) error {
	switch o.Answer {
	case AllowOnce, AllowAlways:
		return nil
	case Deny:
		return &errs.Denial{Code: errs.CodePolicyDenied, Category: category, Reason: reason}
	case Timeout:
		return &errs.Denial{Code: errs.CodeEscalationTimeout, Category: category, Reason: reason + " (nobody approved it in time)"}
	}
	return &errs.Denial{Code: errs.CodeEscalationError, Category: category, Reason: reason + " (the approval could not be obtained)"}
}

// Clock is the time source of a Broker; tests pass a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// DefaultTimeout is how long a Broker waits when the caller passes no
// timeout (policy.Escalation.Timeout's default).
const DefaultTimeout = 30 * time.Second
