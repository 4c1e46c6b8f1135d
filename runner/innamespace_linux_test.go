package runner

import (
	"os"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestInNamespaceNotMainThread: inNamespace never moves the process's main
// thread. /proc/self/ns names the main thread's namespaces, which
// internal/warmrun reads as the server's own (selfNS keeps them for the
// process's life): were the main thread in a box's network namespace
// meanwhile, the server would read the box's as its own, and a main thread
// that could not be put back is never ended by the runtime.
func TestInNamespaceNotMainThread(t *testing.T) {
	testsupport.Require(t, testsupport.Root, testsupport.Proc)
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	// Moving into this process's own namespace needs what a box's does
	// (CAP_SYS_ADMIN) and changes nothing should the test fail.
	ns, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ns)
	var mu sync.Mutex
	onMain := 0
	calls := 0
	// The main thread is one of the few the runtime has here; goroutines
	// that lock threads of their own, many at once, land on it too.
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				err := inNamespace(ns, unix.CLONE_NEWNET, "/proc/thread-self/ns/net", func() error {
					mu.Lock()
					defer mu.Unlock()
					calls++
					if unix.Gettid() == unix.Getpid() {
						onMain++
					}
					runtime.Gosched()
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if onMain > 0 {
		t.Errorf("%d of %d calls ran on the main thread, which /proc/self/ns names", onMain, calls)
	}
	if now, err := os.Readlink("/proc/self/ns/net"); err != nil || now != self {
		t.Errorf("/proc/self/ns/net is %q (%v), was %q", now, err, self)
	}
}
