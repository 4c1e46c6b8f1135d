// Package errs holds airlock's error classes and the one place they are mapped
// to exit codes, JSON-RPC codes and HTTP statuses. Every package may import
// it; it imports nothing of airlock's.
//
// An error keeps its class when wrapped with fmt.Errorf("...: %w", err), so
// callers add context freely and the edge of the program (the CLI, the MCP
// server) still knows what kind of failure it is. What an agent reads is
// AgentMessage: the outermost airlock message, never the causes under it;
// logs, the audit record and the person at the CLI get the whole chain.
package errs

import (
	"errors"
	"fmt"
)

// Class is the kind of a failure, as a caller must react to it.
type Class uint8

const (
	// Internal is a failure of airlock itself; the zero value, so an
	// unclassified error is never mistaken for a refusal or a bad input.
	Internal Class = iota
	// Invalid is bad input: a policy, a flag, an argument, a reference.
	Invalid
	// NotFound is something that does not exist, or that the caller may not
	// know exists (the file store answers both the same way).
	NotFound
	// Denied is a refusal by policy or by a person.
	Denied
	// Unavailable is a capability the host or the configuration cannot give
	// (a sandbox tier, a key, a socket).
	Unavailable
	// Timeout is a deadline that passed (an escalation nobody answered).
	Timeout
)

var classNames = [...]string{"internal", "invalid", "not found", "denied", "unavailable", "timeout"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", c)
}

// Error is an error with a class. Msg is what a user or agent may read; Err,
// when set, is the cause.
type Error struct {
	Class Class
	Msg   string
	Err   error
}

func (e *Error) Error() string {
	switch {
	case e.Err == nil:
		return e.Msg
	case e.Msg == "":
		return e.Err.Error()
	}
	return e.Msg + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error of class c with a formatted message.
func New(c Class, format string, args ...any) error {
	return &Error{Class: c, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns err with class c and a formatted context. A nil err gives nil.
func Wrap(c Class, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Msg: fmt.Sprintf(format, args...), Err: err}
}

// Invalidf is New(Invalid, ...).
func Invalidf(format string, args ...any) error { return New(Invalid, format, args...) }

// Unavailablef is New(Unavailable, ...).
func Unavailablef(format string, args ...any) error { return New(Unavailable, format, args...) }

// NotFoundf is New(NotFound, ...).
func NotFoundf(format string, args ...any) error { return New(NotFound, format, args...) }

// ClassOf reports the class of the outermost classified error in err's chain,
// Internal when there is none.
func ClassOf(err error) Class {
	var ce interface{ ErrClass() Class }
	if errors.As(err, &ce) {
		return ce.ErrClass()
	}
	return Internal
}

// ErrClass lets ClassOf find the class of an *Error.
func (e *Error) ErrClass() Class { return e.Class }

// Is reports whether err has class c.
func Is(err error, c Class) bool { return err != nil && ClassOf(err) == c }

// Denial is the structured refusal an agent receives. It says what was
// refused, never which rule refused it.
type Denial struct {
	// Code is POLICY_DENIED for a refusal by policy or a person,
	// ESCALATION_TIMEOUT when nobody answered in time, ESCALATION_ERROR when
	// the answer could not be had.
	Code string `json:"code"`
	// Category is the policy section the refused call belongs to: fs, net,
	// shell, env, tools or limits.
	Category string `json:"category"`
	// Reason is one sentence for the agent.
	Reason string `json:"reason"`
}

// Codes of a Denial.
const (
	CodePolicyDenied      = "POLICY_DENIED"
	CodeEscalationTimeout = "ESCALATION_TIMEOUT"
	CodeEscalationError   = "ESCALATION_ERROR"
	// CodeEscalationPending means the question was put to a person who
	// answers out of band (an MCP client's retry carries the answer); the
	// call does not run until then.
	CodeEscalationPending = "ESCALATION_PENDING"
)

func (d *Denial) Error() string {
	return fmt.Sprintf("%s (%s): %s", d.Code, d.Category, d.Reason)
}

// ErrClass makes every Denial a Denied error: a timeout or a broken answer is
// still a refusal, so it must never be retried as if it were a fault.
func (d *Denial) ErrClass() Class { return Denied }

// Exit codes of airlock run, fixed by DESIGN.md, and the CLI's usage code.
const (
	ExitUsage     = 2   // a mistake in the command line itself
	ExitRefused   = 126 // refused by policy; nothing ran
	ExitCannotRun = 125 // airlock could not run it
	ExitWallClock = 124 // the wall-clock limit ended it
)

// JSON-RPC error codes of airlock's classes, in the range JSON-RPC leaves to
// servers (-32000 to -32099). JSONRPCDenied is never -32601 (method not
// found): a refusal must read as a refusal, not as a missing tool.
const (
	JSONRPCDenied      = -32001 // a *Denial, or any Denied error
	JSONRPCNotFound    = -32002 // the same code MCP uses for an unknown resource
	JSONRPCUnavailable = -32003
	JSONRPCTimeout     = -32004
	JSONRPCInvalid     = -32602 // JSON-RPC's own "invalid params"
	JSONRPCInternal    = -32603 // JSON-RPC's own "internal error"
)

// Codes is what one class becomes at each edge of the program.
type Codes struct {
	// Exit is the CLI's exit status. Every class but Denied is 125 ("airlock
	// could not run it"), so airlock's own failures never collide with the
	// exit status of the command it ran; the CLI turns a usage mistake (an
	// Invalid error of its own command line) into ExitUsage.
	Exit int
	// JSONRPC is the code of a JSON-RPC error response (MCP).
	JSONRPC int
	// HTTP is the status of an HTTP API response.
	HTTP int
}

// codes is the one mapping of classes to exit codes, JSON-RPC codes and HTTP
// statuses. An invalid call is never a refusal: it reads as a bad argument
// (-32602, 400), so an agent fixes its call instead of giving up on it.
var codes = [...]Codes{
	Internal:    {Exit: ExitCannotRun, JSONRPC: JSONRPCInternal, HTTP: 500},
	Invalid:     {Exit: ExitCannotRun, JSONRPC: JSONRPCInvalid, HTTP: 400},
	NotFound:    {Exit: ExitCannotRun, JSONRPC: JSONRPCNotFound, HTTP: 404},
	Denied:      {Exit: ExitRefused, JSONRPC: JSONRPCDenied, HTTP: 403},
	Unavailable: {Exit: ExitCannotRun, JSONRPC: JSONRPCUnavailable, HTTP: 503},
	Timeout:     {Exit: ExitCannotRun, JSONRPC: JSONRPCTimeout, HTTP: 504},
}

// Codes returns what c becomes at each edge; an unknown class is Internal's.
func (c Class) Codes() Codes {
	if int(c) < len(codes) {
		return codes[c]
	}
	return codes[Internal]
}

// ExitCode maps an error from airlock itself (not the command's own status)
// to the exit code of the CLI; nil is 0.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	return ClassOf(err).Codes().Exit
}

// HTTPStatus maps err to the status of an HTTP API response; nil is 200.
func HTTPStatus(err error) int {
	if err == nil {
		return 200
	}
	return ClassOf(err).Codes().HTTP
}

// AgentMessage is the text an agent may read about err: the message of the
// outermost airlock error in its chain, without the causes it wraps (host
// paths, system-call errors, a library's words), which stay in err.Error()
// for logs and the audit record. A *Denial anywhere in the chain is read as
// the denial. An Internal error, and an error with nothing of airlock's own
// to say, read as a one-line statement of the class.
func AgentMessage(err error) string {
	if err == nil {
		return ""
	}
	var d *Denial
	if errors.As(err, &d) {
		return d.Error()
	}
	if ClassOf(err) == Internal {
		return "airlock: internal error"
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch x := e.(type) {
		case *Error:
			if x.Msg != "" {
				return x.Msg
			}
			continue // a bare classification: its cause may still be ours
		case interface{ ErrClass() Class }:
			// Another package's classified error: its own text is its
			// message only when it wraps nothing.
			if errors.Unwrap(e) == nil {
				return e.Error()
			}
			return "airlock: " + x.ErrClass().String()
		}
	}
	return "airlock: " + ClassOf(err).String()
}

// JSONRPC maps err to the error of a JSON-RPC response (the MCP server and
// gateway): its code, its message, and its data. The message is
// AgentMessage(err), never the wrapped causes. A *Denial's data is the
// Denial itself, so the client reads {"code":"POLICY_DENIED","category":…,
// "reason":…}; any other error's data is {"class": "<class>"}.
func JSONRPC(err error) (code int, message string, data any) {
	var d *Denial
	if errors.As(err, &d) {
		return JSONRPCDenied, d.Error(), d
	}
	c := ClassOf(err)
	return c.Codes().JSONRPC, AgentMessage(err), map[string]string{"class": c.String()}
}
