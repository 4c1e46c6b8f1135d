package boxinit

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// What a call's processes inherit from a warm box's init at fork, and that
// a process of the same user may change in the init from outside it
// without ptrace's permission (the init is not dumpable, but prlimit,
// setpriority, sched_setaffinity, sched_setscheduler, sched_setattr and
// ioprio_set only ask for the same user): its resource limits, and its
// calling thread's nice value, scheduling policy and clamps, CPU affinity
// and I/O priority. They are kept as the box began and put back on that
// thread after every call, once nothing of the call is left; what cannot
// be put back (a lowered hard limit, a raised nice value: only privilege
// undoes them) leaves the box dirty, and the runner retires it.

// rlimNLimits is RLIM_NLIMITS: RLIMIT_CPU through RLIMIT_RTTIME.
const rlimNLimits = 16

// standing is the inherited attributes of the init's calling thread.
type standing struct {
	rlim     [rlimNLimits]unix.Rlimit
	sched    unix.SchedAttr
	affinity unix.CPUSet
	ioprio   int
}

// ioprioWhoProcess is IOPRIO_WHO_PROCESS: with who 0, the calling thread.
const ioprioWhoProcess = 1

// readStanding reads the calling thread's inherited attributes.
func readStanding() (standing, error) {
	var s standing
	for r := range s.rlim {
		if err := unix.Getrlimit(r, &s.rlim[r]); err != nil {
			return s, fmt.Errorf("getrlimit %d: %v", r, err)
		}
	}
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return s, fmt.Errorf("sched_getattr: %v", err)
	}
	s.sched = schedKept(attr)
	if err := unix.SchedGetaffinity(0, &s.affinity); err != nil {
		return s, fmt.Errorf("sched_getaffinity: %v", err)
	}
	prio, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, 0, 0)
	if e != 0 {
		return s, fmt.Errorf("ioprio_get: %v", e)
	}
	s.ioprio = int(prio)
	return s, nil
}

// schedKept is what of a thread's scheduling is compared: its policy,
// nice value, priority and utilisation clamps.
func schedKept(a *unix.SchedAttr) unix.SchedAttr {
	return unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: a.Policy, Nice: a.Nice, Priority: a.Priority,
		Util_min: a.Util_min, Util_max: a.Util_max}
}

// restoreStanding puts first back on the calling thread and says what is
// still not as it was.
func restoreStanding(first standing) error {
	now, err := readStanding()
	if err != nil {
		return err
	}
	if now == first {
		return nil
	}
	for r := range first.rlim {
		if now.rlim[r] != first.rlim[r] {
			// prlimit, not Setrlimit: Go's Setrlimit of RLIMIT_NOFILE
			// would also drop the soft limit the runtime gives back to
			// every process it starts.
			unix.Prlimit(0, r, &first.rlim[r], nil)
		}
	}
	if now.sched != first.sched {
		attr := first.sched
		unix.SchedSetAttr(0, &attr, 0)
		if now.sched.Util_min != first.sched.Util_min || now.sched.Util_max != first.sched.Util_max {
			attr.Flags = unix.SCHED_FLAG_UTIL_CLAMP
			unix.SchedSetAttr(0, &attr, 0)
		}
	}
	if now.affinity != first.affinity {
		unix.SchedSetaffinity(0, &first.affinity)
	}
	if now.ioprio != first.ioprio {
		unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, 0, uintptr(first.ioprio))
	}
	return standingDiff(first)
}

// standingDiff reads the thread's attributes again and names those that
// differ from first.
func standingDiff(first standing) error {
	now, err := readStanding()
	if err != nil {
		return err
	}
	var left []string
	for r := range first.rlim {
		if now.rlim[r] != first.rlim[r] {
			left = append(left, fmt.Sprintf("resource limit %d is %d:%d, was %d:%d",
				r, now.rlim[r].Cur, now.rlim[r].Max, first.rlim[r].Cur, first.rlim[r].Max))
		}
	}
	if now.sched != first.sched {
		left = append(left, fmt.Sprintf("scheduling is policy %d nice %d, was policy %d nice %d",
			now.sched.Policy, now.sched.Nice, first.sched.Policy, first.sched.Nice))
	}
	if now.affinity != first.affinity {
		left = append(left, "CPU affinity changed")
	}
	if now.ioprio != first.ioprio {
		left = append(left, fmt.Sprintf("I/O priority is %#x, was %#x", now.ioprio, first.ioprio))
	}
	if len(left) > 0 {
		return errors.New("the init's inherited attributes were changed by a call and cannot be put back: " + strings.Join(left, ", "))
	}
	return nil
}
