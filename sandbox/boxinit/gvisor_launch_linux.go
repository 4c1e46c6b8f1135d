package boxinit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// gvisorLaunchMain is the launcher of a tier-2 box, run by the runner on
// the host as root, not in a box: in a mount namespace of its own it binds
// each pinned source (descriptors from 4, listed as JSON on descriptor 3;
// see boxconf.GVisorLaunchArg) onto its place in the box's directory,
// checks that the place is then the pinned inode, makes the read-only ones
// read-only on the host side too, and becomes runsc (args after "--"). The binds live in that namespace only,
// so they go when runsc and its children do, whatever ends them. It
// returns 125 when the box cannot be built.
func gvisorLaunchMain(args []string) int {
	if err := gvisorLaunch(args); err != nil {
		fmt.Fprintf(os.Stderr, "airlock: gvisor launch: %v\n", err)
	}
	return 125
}

func gvisorLaunch(args []string) error {
	if len(args) < 2 || args[0] != "--" {
		return fmt.Errorf("usage: -- RUNSC ARGS")
	}
	// unshare and exec from one thread: the namespace is the thread's.
	runtime.LockOSThread()
	data, err := io.ReadAll(io.LimitReader(os.NewFile(3, "config"), 16<<20))
	if err != nil {
		return err
	}
	var srcs []boxconf.GVisorSource
	if err := json.Unmarshal(data, &srcs); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	// Detached copies of the pinned mounts, made before leaving the
	// namespace the descriptors belong to (a bind across namespaces is
	// refused); each is attached in the new one.
	trees := make([]int, len(srcs))
	for i, s := range srcs {
		fd, err := unix.OpenTree(s.FD, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("copy the mount of %s: %w", s.Target, err)
		}
		trees[i] = fd
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare the mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	for i, s := range srcs {
		if err := unix.MoveMount(trees[i], "", unix.AT_FDCWD, s.Target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("bind %s: %w", s.Target, err)
		}
		var st unix.Stat_t
		if err := unix.Stat(s.Target, &st); err != nil {
			return fmt.Errorf("bind %s: %w", s.Target, err)
		}
		if uint64(st.Dev) != s.Dev || st.Ino != s.Ino {
			return fmt.Errorf("bind %s: it is not the inode airlock checked (the source changed while the box was built)", s.Target)
		}
		if s.ReadOnly {
			if err := unix.Mount("", s.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("make %s read-only: %w", s.Target, err)
			}
		}
	}
	// Its own descriptors go; those after them are runsc's (the in-box
	// init's pipes, which runsc passes in with --pass-fd).
	unix.CloseRange(3, uint(3+len(srcs)), unix.CLOSE_RANGE_CLOEXEC)
	return unix.Exec(args[1], args[1:], []string{})
}
