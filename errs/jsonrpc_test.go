package errs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJSONRPC(t *testing.T) {
	denial := &Denial{Code: CodePolicyDenied, Category: "tools", Reason: "the tool rm is not allowed here"}
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantMsg  string
		wantData any
	}{
		{"denial", denial, JSONRPCDenied, "POLICY_DENIED (tools): the tool rm is not allowed here", denial},
		{"wrapped denial", fmt.Errorf("call: %w", denial), JSONRPCDenied, "POLICY_DENIED (tools): the tool rm is not allowed here", denial},
		{"timeout denial", &Denial{Code: CodeEscalationTimeout, Category: "tools", Reason: "no approval came"}, JSONRPCDenied,
			"ESCALATION_TIMEOUT (tools): no approval came", &Denial{Code: CodeEscalationTimeout, Category: "tools", Reason: "no approval came"}},
		{"invalid", Invalidf("bad argument"), JSONRPCInvalid, "bad argument", map[string]string{"class": "invalid"}},
		{"not found", NotFoundf("no such ref"), JSONRPCNotFound, "no such ref", map[string]string{"class": "not found"}},
		{"unavailable", Unavailablef("no box"), JSONRPCUnavailable, "no box", map[string]string{"class": "unavailable"}},
		{"timeout", New(Timeout, "too slow"), JSONRPCTimeout, "too slow", map[string]string{"class": "timeout"}},
		{"internal hides its cause", errors.New("open /secret/path: denied"), JSONRPCInternal, "airlock: internal error", map[string]string{"class": "internal"}},
		{"wrapped cause stays out", Wrap(Unavailable, errors.New("open /secret/path: permission denied"), "the audit log cannot be written"),
			JSONRPCUnavailable, "the audit log cannot be written", map[string]string{"class": "unavailable"}},
		{"invalid under context", fmt.Errorf("exec: %w", Wrap(Invalid, errors.New("/home/u/.config: bad"), "bad argv")),
			JSONRPCInvalid, "bad argv", map[string]string{"class": "invalid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg, data := JSONRPC(tt.err)
			if code != tt.wantCode || msg != tt.wantMsg {
				t.Errorf("got (%d, %q), want (%d, %q)", code, msg, tt.wantCode, tt.wantMsg)
			}
			if diff := cmp.Diff(tt.wantData, data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSONRPCDeniedIsNotMethodNotFound(t *testing.T) {
	if JSONRPCDenied == -32601 || JSONRPCNotFound == -32601 {
		t.Fatalf("a denial or a missing thing must not read as JSON-RPC's method not found (-32601)")
	}
	if JSONRPCDenied == JSONRPCNotFound {
		t.Fatalf("denied and not found share code %d", JSONRPCDenied)
	}
}
