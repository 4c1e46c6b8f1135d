// Package testsupport is what airlock's tests share: the gate for what a
// test needs from the host (root, bubblewrap, cgroups, network namespaces,
// programs on PATH), which skips the test with the reason where the host
// lacks it and fails it under CI=true, where the host must have it all; and
// the airlock binary, built once per test run.
//
// Only _test.go files import it (internal/importrules checks that no
// package does), so nothing here reaches the airlock binary. It imports no
// airlock package, so every package's own tests can use it without an
// import cycle.
package testsupport
