package runner

import (
	"os/exec"
	"syscall"
)

// asBoxUser starts bubblewrap as the user the plan chose (sandbox.Box.RunAs:
// airlock runs as root on another user's checkout), with no supplementary
// groups, so nothing of root's standing reaches the box.
func asBoxUser(r *run, cmd *exec.Cmd) {
	if r.box == nil || r.box.RunAs == nil {
		return
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: r.box.RunAs.UID, Gid: r.box.RunAs.GID, Groups: []uint32{}}
}
