package testsupport

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// probeNetNS moves one locked thread into a new network namespace. The
// thread is never unlocked, so the runtime ends it with the goroutine and
// the namespace goes with it; no other goroutine ever runs there.
func probeNetNS() string {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- unix.Unshare(unix.CLONE_NEWNET)
	}()
	if err := <-errc; err != nil {
		return "the kernel refuses a new network namespace (unshare(CLONE_NEWNET): " + err.Error() + ")"
	}
	return ""
}
