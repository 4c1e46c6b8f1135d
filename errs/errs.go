// Package errs holds airlock's error classes and the one place they are mapped
// to process exit codes. Every package may import it; it imports nothing of
// airlock's.
//
// An error keeps its class when wrapped with fmt.Errorf("...: %w", err), so
// callers add context freely and the edge of the program (the CLI, the MCP
// server) still knows what kind of failure it is.
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

// Exit codes of airlock run, fixed by DESIGN.md.
const (
	ExitRefused   = 126 // refused by policy; nothing ran
	ExitCannotRun = 125 // airlock could not run it
	ExitWallClock = 124 // the wall-clock limit ended it
)

// ExitCode maps an error from airlock itself (not the command's own status)
// to the exit code of the CLI.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	switch ClassOf(err) {
	case Denied:
		return ExitRefused
	default:
		return ExitCannotRun
	}
}

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

// JSONRPC maps err to the error of a JSON-RPC response (the MCP server and
// gateway): its code, its message, and its data. A *Denial's data is the
// Denial itself, so the client reads {"code":"POLICY_DENIED","category":…,
// "reason":…}; any other error's data is {"class": "<class>"}. An Internal
// error's message says only that airlock failed, since its cause may name
// things the agent should not read.
func JSONRPC(err error) (code int, message string, data any) {
	var d *Denial
	if errors.As(err, &d) {
		return JSONRPCDenied, d.Error(), d
	}
	c := ClassOf(err)
	switch c {
	case Denied:
		code = JSONRPCDenied
	case NotFound:
		code = JSONRPCNotFound
	case Unavailable:
		code = JSONRPCUnavailable
	case Timeout:
		code = JSONRPCTimeout
	case Invalid:
		code = JSONRPCInvalid
	default:
		return JSONRPCInternal, "airlock: internal error", map[string]string{"class": c.String()}
	}
	return code, err.Error(), map[string]string{"class": c.String()}
}
