// Package boxinit is the code that runs inside the box: airlock's own binary,
// re-executed by bubblewrap in a hidden mode, sets up what must be done from
// inside (checking the pinned binds, no_new_privs, seccomp, forwarders,
// closing descriptors) and then starts the target and waits for it. It is
// imported only by cmd/airlock (to dispatch the hidden mode) and by tests
// that re-execute themselves.
//
// The host side talks to it only through sandbox/boxconf: a configuration
// pipe in, a status pipe out.
package boxinit

// Arg is the hidden first argument that selects the in-box mode.
const Arg = "__airlock-box-init"
