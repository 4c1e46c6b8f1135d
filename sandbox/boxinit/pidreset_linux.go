package boxinit

import (
	"fmt"
	"os"
)

// nsLastPid is the sysctl that names the last process id given out in the
// writer's own PID namespace (the one it was started in), whatever
// namespace the /proc it is opened through belongs to.
const nsLastPid = "/proc/sys/kernel/ns_last_pid"

// resetPids sets the last PID of the namespace this process was started in
// back to 1, so the next process made there is given the lowest free id
// above the init's, as in a box no call has run in yet. The runner starts
// it, in the host's mounts, inside a warm box's PID namespace; writing
// needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE) over that namespace,
// which the runner has and no process of the box does.
func resetPids() int {
	if err := os.WriteFile(nsLastPid, []byte("1\n"), 0); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: box: reset the process ids: %v\n", err)
		return 125
	}
	return 0
}
