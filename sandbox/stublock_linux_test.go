package sandbox

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestConcurrentPlansShareStubs: boxes planned at once in one writable
// root make each placeholder once and share it; it stays while any box
// holds it and goes, with the root's lock file, when the last one closes.
func TestConcurrentPlansShareStubs(t *testing.T) {
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("needs bubblewrap at /usr/bin/bwrap")
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	work := t.TempDir()
	exe, _ := os.Executable()
	const n = 24
	boxes := make([]*Box, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			boxes[i], errs[i] = Plan(Spec{Workdir: work, Write: []string{work}, Writable: true}, Tier1, exe)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("plan %d: %v", i, err)
		}
	}
	want := boxes[0].Stubs
	if len(want) == 0 {
		t.Fatal("no placeholders were made, so this test shows nothing")
	}
	for i, b := range boxes {
		if len(b.Stubs) != len(want) {
			t.Fatalf("box %d holds %d placeholders, box 0 %d", i, len(b.Stubs), len(want))
		}
		for j, s := range b.Stubs {
			if s.Path != want[j].Path || s.Ino != want[j].Ino || s.Lock == "" {
				t.Errorf("box %d placeholder %s (inode %d, lock %q), box 0 %s (inode %d): want one shared file under a lock", i, s.Path, s.Ino, s.Lock, want[j].Path, want[j].Ino)
			}
		}
	}
	lock := want[0].Lock
	for _, b := range boxes[1:] {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// One box still runs: its protection is still in the tree.
	for _, s := range want {
		if _, err := os.Lstat(s.Path); err != nil {
			t.Errorf("placeholder %s went while a box still held it: %v", s.Path, err)
		}
	}
	if err := boxes[0].Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("left in the working directory after the last Close: %d entries", len(ents))
	}
	if _, err := os.Lstat(lock); !os.IsNotExist(err) {
		t.Errorf("the root's lock file %s is still there after the last box (%v)", lock, err)
	}
}

// TestStubLockFollowsRemoval: a run waiting for a root's lock while its
// last user removes the lock file must not lock the removed file (that
// would exclude nobody) but the one at the path.
func TestStubLockFollowsRemoval(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	path := rootLockPath(1, 2)
	first, err := lockStubs(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *stubLock, 1)
	go func() {
		l, err := lockStubs(path)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("a second run took the lock while the first held it")
	case <-time.After(50 * time.Millisecond):
	}
	first.unlock(true)
	second := <-got
	if second == nil {
		return
	}
	defer second.unlock(true)
	have, now := statFD(t, second.f), statPath(t, path)
	if have != now {
		t.Errorf("the waiter locked inode %v, the lock file at the path is %v", have, now)
	}
	if _, held, _ := tryLock(path); !held {
		t.Errorf("a third run could take the lock the waiter holds")
	}
}

// TestStubLockNotOnARemovedFile: the lock file opened, then removed by its
// last user before the flock: that lock would exclude nobody, so it is
// not taken.
func TestStubLockNotOnARemovedFile(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	path := rootLockPath(3, 4)
	l, err := lockStubs(path)
	if err != nil {
		t.Fatal(err)
	}
	l.unlock(false)
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	got, held, err := lockOpened(fd, path)
	if got != nil || held || err != nil {
		if got != nil {
			got.unlock(false)
		}
		t.Errorf("lockOpened on a removed file = %v, held %v, %v; want neither, to open the new one", got, held, err)
	}
}

// TestStubLockDirMustBePrivate: a lock directory another user could enter
// (made first in a shared /tmp) is refused, so nobody else can hold or swap
// the locks.
func TestStubLockDirMustBePrivate(t *testing.T) {
	rt := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	if err := os.MkdirAll(filepath.Join(rt, "airlock"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(rt, "airlock"), 0o777)
	if l, err := lockStubs(rootLockPath(1, 2)); err == nil {
		l.unlock(true)
		t.Fatal("took a lock in a directory open to everybody")
	}
}

func statFD(t *testing.T, f *os.File) [2]uint64 {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return sysIno(st)
}

func statPath(t *testing.T, p string) [2]uint64 {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return sysIno(st)
}

func sysIno(fi os.FileInfo) [2]uint64 {
	st := fi.Sys().(*syscall.Stat_t)
	return [2]uint64{uint64(st.Dev), st.Ino}
}
