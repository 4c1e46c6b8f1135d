package sandbox

import _ "embed"

// EscapeCases is the escape matrix's case file (package sandbox/escape
// parses it; `airlock sandbox selftest` runs it). It lives here because
// go:embed cannot reach a parent directory.
//
//go:embed testdata/escape-cases.json
var EscapeCases []byte
