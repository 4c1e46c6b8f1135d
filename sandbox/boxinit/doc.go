// Package boxinit is the code that runs inside the box: the small
// airlock-box binary (cmd/airlock-box) or, where there is none beside it,
// airlock's own binary re-executed in a hidden mode, sets up what must be done from
// inside (checking the pinned binds, no_new_privs, seccomp, forwarders,
// closing descriptors) and then starts the target and waits for it. It is
// imported only by the binaries that run in a box (cmd/airlock-box, and
// cmd/airlock and cmd/airlock-node to dispatch the hidden mode) and by
// tests that re-execute themselves.
//
// The host side talks to it only through sandbox/boxconf: a configuration
// pipe in, a status pipe out.
package boxinit

// Arg is the hidden first argument that selects the in-box mode.
const Arg = "__airlock-box-init"
