package mcp

import (
	"encoding/json"

	"github.com/airlock-run/airlock/errs"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// CodeDenied is the JSON-RPC error code of a refusal by policy or by a
// person (POLICY_DENIED, ESCALATION_TIMEOUT, ESCALATION_ERROR). It is not
// -32601 (method not found): an agent told "not found" would look for the
// tool elsewhere instead of reading why it was refused.
const CodeDenied = errs.JSONRPCDenied

// Error turns err into the JSON-RPC error a client reads, with the code,
// message and data errs.JSONRPC gives it. A denial's data is the
// *errs.Denial itself: {"code":"POLICY_DENIED","category":"tools","reason":…}.
func Error(err error) *jsonrpc.Error {
	code, msg, data := errs.JSONRPC(err)
	je := &jsonrpc.Error{Code: int64(code), Message: msg}
	if data != nil {
		if b, merr := json.Marshal(data); merr == nil {
			je.Data = b
		}
	}
	return je
}

// Denial reads the structured denial back out of a JSON-RPC error; ok is
// false when the error is not a denial.
func Denial(je *jsonrpc.Error) (d errs.Denial, ok bool) {
	if je == nil || je.Code != CodeDenied || len(je.Data) == 0 {
		return d, false
	}
	if json.Unmarshal(je.Data, &d) != nil || d.Code == "" {
		return errs.Denial{}, false
	}
	return d, true
}
