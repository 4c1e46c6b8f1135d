// Package boxinit is the code that runs inside the box: airlock's own binary,
// re-executed by bubblewrap in a hidden mode, sets up what must be done from
// inside (no_new_privs, seccomp, forwarders, closing descriptors) and then
// starts the target and reaps its children. It is imported only by
// cmd/airlock (to dispatch the hidden mode) and by tests that re-execute
// themselves.
package boxinit

import (
	"fmt"
	"os"
)

// Arg is the hidden first argument that selects the in-box mode.
const Arg = "__airlock-box-init"

// Main runs the in-box init with the arguments after Arg and returns the exit
// status of the target.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "airlock box init: not available in this build")
	return 125
}
