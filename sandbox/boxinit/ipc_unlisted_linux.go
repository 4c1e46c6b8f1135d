package boxinit

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// gVisor's kernel has System V IPC but no /proc/sysvipc to list it, and
// its IPC_INFO does not name the highest id in use. It gives ids in
// order, one past the last given (from 1, in the box's own namespace),
// so the init finds what a call made by making one object of each kind
// itself after the call: every id between the last such probe and this
// one was given during the call, and is removed with it.

// maxUnlistedIDs bounds the ids one call may have been given; a call
// that made more leaves the box dirty.
const maxUnlistedIDs = 1 << 16

// ipcKind is one kind of System V object, made and removed by id.
type ipcKind struct {
	name string
	make func() (int, error)
	rm   func(id int) error
	// last is the id of this kind's previous probe (0: none yet).
	last int
}

var unlistedKinds = []*ipcKind{
	{name: "shm", make: func() (int, error) { return unix.SysvShmGet(unix.IPC_PRIVATE, 1, unix.IPC_CREAT|0o600) },
		rm: func(id int) error { _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); return err }},
	{name: "msg", make: func() (int, error) {
		id, _, e := unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o600, 0)
		return int(id), ipcErr(0, 0, e)
	}, rm: func(id int) error { return ipcErr(unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0)) }},
	{name: "sem", make: func() (int, error) {
		id, _, e := unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 1, unix.IPC_CREAT|0o600)
		return int(id), ipcErr(0, 0, e)
	}, rm: func(id int) error {
		return ipcErr(unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0))
	}},
}

// clearUnlistedIPC removes every System V object a call made in a box
// whose kernel cannot list them (gVisor), and fails when it cannot tell.
func clearUnlistedIPC() error {
	var left []string
	for _, k := range unlistedKinds {
		if err := k.clear(); err != nil {
			left = append(left, fmt.Sprintf("%s: %v", k.name, err))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("ipc: %s", strings.Join(left, ", "))
	}
	return nil
}

func (k *ipcKind) clear() error {
	probe, err := k.make()
	if errors.Is(err, unix.ENOSYS) {
		return nil // no System V IPC in this kernel
	}
	if err != nil {
		return fmt.Errorf("probe: %v", err)
	}
	rerr := k.rm(probe)
	from := k.last
	k.last = probe
	if rerr != nil {
		return fmt.Errorf("remove the probe %d: %v", probe, rerr)
	}
	if probe <= from || probe-from > maxUnlistedIDs {
		// Ids wrapped, or more than the bound were given: what lies
		// between cannot be told from what does not.
		return fmt.Errorf("ids %d to %d cannot be checked", from, probe)
	}
	for id := from + 1; id < probe; id++ {
		if err := k.rm(id); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EIDRM) {
			return fmt.Errorf("%d: %v", id, err)
		}
	}
	return nil
}
