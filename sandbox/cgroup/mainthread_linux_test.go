package cgroup

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPlacedNotMainThread: the thread a v1 Start forks from is never the
// process's main thread, whose cgroups /proc/self/cgroup names as the
// process's own (internal/warmrun reads the server's there for every call)
// and which the runtime never ends, so one not moved back would stay in
// the box's group for good.
func TestPlacedNotMainThread(t *testing.T) {
	i := requireV1(t)
	var mu sync.Mutex
	onMain, calls := 0, 0
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 25; n++ {
				g, err := i.New(fmt.Sprintf("test-%d-%d-main", os.Getpid(), groupSeq.Add(1)), Limits{Pids: 8})
				if err != nil {
					t.Error(err)
					return
				}
				if n%2 == 0 {
					g.Place()
				}
				err = g.Start(&syscall.SysProcAttr{}, func() error {
					mu.Lock()
					defer mu.Unlock()
					calls++
					if unix.Gettid() == unix.Getpid() {
						onMain++
					}
					return nil
				})
				if err != nil {
					t.Error(err)
				}
				if err := g.Close(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if onMain > 0 {
		t.Errorf("%d of %d Starts forked from the main thread, which /proc/self/cgroup names", onMain, calls)
	}
}
