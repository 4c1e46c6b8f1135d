package errs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// TestCodes is the one mapping of classes to the codes of every edge.
func TestCodes(t *testing.T) {
	tests := []struct {
		class Class
		want  Codes
	}{
		{Internal, Codes{Exit: 125, JSONRPC: -32603, HTTP: 500}},
		{Invalid, Codes{Exit: 125, JSONRPC: -32602, HTTP: 400}},
		{NotFound, Codes{Exit: 125, JSONRPC: -32002, HTTP: 404}},
		{Denied, Codes{Exit: 126, JSONRPC: -32001, HTTP: 403}},
		{Unavailable, Codes{Exit: 125, JSONRPC: -32003, HTTP: 503}},
		{Timeout, Codes{Exit: 125, JSONRPC: -32004, HTTP: 504}},
		{Class(200), Codes{Exit: 125, JSONRPC: -32603, HTTP: 500}},
	}
	if len(tests)-1 != len(classNames) {
		t.Fatalf("the table covers %d classes, there are %d", len(tests)-1, len(classNames))
	}
	for _, tt := range tests {
		t.Run(tt.class.String(), func(t *testing.T) {
			if got := tt.class.Codes(); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			err := New(tt.class, "x")
			if got := ExitCode(err); got != tt.want.Exit {
				t.Errorf("ExitCode: got %d, want %d", got, tt.want.Exit)
			}
			if got := HTTPStatus(fmt.Errorf("ctx: %w", err)); got != tt.want.HTTP {
				t.Errorf("HTTPStatus: got %d, want %d", got, tt.want.HTTP)
			}
			if code, _, _ := JSONRPC(err); code != tt.want.JSONRPC {
				t.Errorf("JSONRPC: got %d, want %d", code, tt.want.JSONRPC)
			}
		})
	}
	if ExitCode(nil) != 0 || HTTPStatus(nil) != 200 {
		t.Errorf("nil: got exit %d and status %d, want 0 and 200", ExitCode(nil), HTTPStatus(nil))
	}
}

// TestInvalidIsNotARefusal: a bad call reads as a bad argument at every
// edge, never as POLICY_DENIED or exit 126, so an agent fixes its call.
func TestInvalidIsNotARefusal(t *testing.T) {
	err := fmt.Errorf("exec: %w", Invalidf("empty argv"))
	if code, _, data := JSONRPC(err); code != JSONRPCInvalid || code == JSONRPCDenied {
		t.Errorf("JSON-RPC code %d (data %v), want %d", code, data, JSONRPCInvalid)
	}
	if ExitCode(err) == ExitRefused || HTTPStatus(err) == 403 {
		t.Errorf("exit %d, status %d: an invalid call must not read as a refusal", ExitCode(err), HTTPStatus(err))
	}
}

// oddError is a classified error of another package that wraps a cause.
type oddError struct{ err error }

func (e *oddError) Error() string   { return "odd: " + e.err.Error() }
func (e *oddError) Unwrap() error   { return e.err }
func (e *oddError) ErrClass() Class { return Unavailable }

// plainClassified is a classified error of another package with no cause.
type plainClassified struct{}

func (plainClassified) Error() string   { return "policy.yaml:3:1: fs: unknown key" }
func (plainClassified) ErrClass() Class { return Invalid }

// TestAgentMessage: an agent reads the message of the outermost airlock
// error, never the causes it wraps; the full chain stays in Error().
func TestAgentMessage(t *testing.T) {
	const secret = "/nonexistent/host/secret/path"
	_, openErr := os.Open(secret)
	if openErr == nil || !errors.Is(openErr, fs.ErrNotExist) {
		t.Fatalf("want an open error, got %v", openErr)
	}
	denial := &Denial{Code: CodePolicyDenied, Category: "fs", Reason: "the path is outside the workspace"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"message only", Invalidf("bad argument"), "bad argument"},
		{"wrapped syscall error", Wrap(Unavailable, openErr, "audit: the record could not be written"), "audit: the record could not be written"},
		{"under fmt context", fmt.Errorf("run: %w", Wrap(NotFound, openErr, "no such result")), "no such result"},
		{"outermost wins", Wrap(Unavailable, Wrap(Invalid, openErr, "inner"), "outer"), "outer"},
		{"bare class defers to the cause", Wrap(Invalid, Invalidf("the real message"), ""), "the real message"},
		{"bare class over a foreign cause", Wrap(Unavailable, openErr, ""), "airlock: unavailable"},
		{"denial", fmt.Errorf("call: %w", denial), "POLICY_DENIED (fs): the path is outside the workspace"},
		{"denial under an airlock error", Wrap(Unavailable, denial, "outer"), "POLICY_DENIED (fs): the path is outside the workspace"},
		{"internal", openErr, "airlock: internal error"},
		{"internal wrapper", Wrap(Internal, openErr, "open the store at /home/u/x"), "airlock: internal error"},
		{"foreign classified with a cause", &oddError{openErr}, "airlock: unavailable"},
		{"foreign classified without a cause", fmt.Errorf("load: %w", plainClassified{}), "policy.yaml:3:1: fs: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AgentMessage(tt.err)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if strings.Contains(got, secret) {
				t.Errorf("the agent reads the host path: %q", got)
			}
			if errors.Is(tt.err, openErr) && !strings.Contains(tt.err.Error(), secret) {
				t.Errorf("the full chain %q lost its cause", tt.err.Error())
			}
		})
	}
}
