package escape

import _ "embed"

// CaseFile is the matrix's case file as built into the binary; `airlock
// sandbox selftest` parses it unless given --cases.
//
//go:embed testdata/escape-cases.json
var CaseFile []byte
