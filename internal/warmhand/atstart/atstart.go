// Package atstart hands the airlock binary's `airlock run` to `airlock
// warm` while the binary's packages are initialised (warmhand.Start):
// Go initialises a package once all it imports are, taking the first ready
// in import-path order, and this one imports only warmhand, which imports
// little, so a run handed over waits for none of the rest (the policy
// parser, YAML, HTTP, TLS). Only cmd/airlock imports it.
package atstart

import "github.com/airlock-run/airlock/internal/warmhand"

// tried is Start's answer, given once while the process starts: a fact of
// the process's start, read-only afterwards, as os.Args is.
var tried = warmhand.Start()

// Tried reports whether the hand-over was tried at the start and the run
// went cold: `airlock run` then runs cold without trying again.
func Tried() bool { return tried }
