package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// etcKeyFmt is etcKey as it was written with fmt: the key of every view
// kept on the host, which the faster one must give byte for byte.
func etcKeyFmt(srcs []etcSource, gens []etcGen, uid, gid int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00euid=%d uid=%d gid=%d\x00", etcViewVersion, os.Geteuid(), uid, gid)
	for _, s := range srcs {
		st := &s.st
		fmt.Fprintf(h, "src %q %q dev=%d ino=%d mode=%o uid=%d gid=%d size=%d mtime=%d ctime=%d\x00",
			s.box, s.pn.real, st.Dev, st.Ino, st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Nano(), st.Ctim.Nano())
	}
	for _, g := range gens {
		fmt.Fprintf(h, "gen %q %d %s\x00", g.box, len(g.content), g.content)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func TestEtcKeyIsTheKeptViewsKey(t *testing.T) {
	st := func(dev, ino uint64, mode, uid uint32, size, m, c int64) unix.Stat_t {
		return unix.Stat_t{Dev: dev, Ino: ino, Mode: mode, Uid: uid, Gid: uid + 1, Size: size,
			Mtim: unix.NsecToTimespec(m), Ctim: unix.NsecToTimespec(c)}
	}
	tests := []struct {
		name     string
		srcs     []etcSource
		gens     []etcGen
		uid, gid int
	}{
		{"none", nil, nil, 0, 0},
		{"host-like", []etcSource{
			{box: "/etc/os-release", pn: &pinned{real: "/usr/lib/os-release"}, st: st(0xfe00, 1<<40, 0o100644, 0, 267, 1700000000123456789, 1700000000123456789)},
			{box: "/etc/ssl/certs", pn: &pinned{real: "/etc/ssl/certs"}, st: st(^uint64(0), 2, 0o40755, 1000, 1<<20, -5, 0)},
		}, []etcGen{{"/etc/passwd", "airlock:x:1000:1000:airlock:/home/airlock:/bin/sh\n"}}, 1000, 1000},
		{"quoting", []etcSource{
			{box: "/etc/a \"b\"\n\x00é", pn: &pinned{real: "/etc/\x7f\u2028"}, st: st(1, 1, 0o120777, 65534, 0, 0, 0)},
		}, []etcGen{{"/etc/hosts", "tab\there\x00nul"}, {"/etc/empty", ""}}, -1, 65534},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := etcKey(tt.srcs, tt.gens, tt.uid, tt.gid), etcKeyFmt(tt.srcs, tt.gens, tt.uid, tt.gid); got != want {
				t.Errorf("got %s, want %s (the fmt text's)", got, want)
			}
		})
	}
}

// TestDirNamesReadsAgainWhenTheDirectoryChanges: the names are kept for a
// directory whose stamp is unchanged and settled, read again once an
// entry is made, removed or renamed, and never kept for a directory
// changed within the racy window.
func TestDirNamesReadsAgainWhenTheDirectoryChanges(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sorted := func() []string {
		n := slices.Clone(dirNames(dir))
		slices.Sort(n)
		return n
	}
	kept := func() bool {
		dirNamesCache.Lock()
		defer dirNamesCache.Unlock()
		_, ok := dirNamesCache.m[dir]
		return ok
	}
	touch("java-17")
	if got := sorted(); !slices.Equal(got, []string{"java-17"}) || kept() {
		t.Fatalf("a directory changed a moment ago: got %v, kept %v; want its names, not kept", got, kept())
	}

	old := etcRacyWindow
	etcRacyWindow = 0
	t.Cleanup(func() { etcRacyWindow = old })
	if got := sorted(); !slices.Equal(got, []string{"java-17"}) || !kept() {
		t.Fatalf("got %v, kept %v; want the names, kept", got, kept())
	}
	steps := []struct {
		name   string
		change func() error
		want   []string
	}{
		{"made", func() error { return os.WriteFile(filepath.Join(dir, "java-21"), nil, 0o644) }, []string{"java-17", "java-21"}},
		{"renamed", func() error { return os.Rename(filepath.Join(dir, "java-17"), filepath.Join(dir, "java-11")) }, []string{"java-11", "java-21"}},
		{"removed", func() error { return os.Remove(filepath.Join(dir, "java-21")) }, []string{"java-11"}},
	}
	for _, s := range steps {
		// The file system's clock may not move between two changes made
		// at once: wait for it, as the window does.
		time.Sleep(20 * time.Millisecond)
		if err := s.change(); err != nil {
			t.Fatal(err)
		}
		if got := sorted(); !slices.Equal(got, s.want) {
			t.Errorf("%s: got %v, want %v", s.name, got, s.want)
		}
	}
	if got := dirNames(filepath.Join(dir, "none")); got != nil {
		t.Errorf("a missing directory: got %v, want no names", got)
	}
}

// TestReadSysctlReadsAsReadFile: the probe's reader gives what
// os.ReadFile gives for the kernel's files, and fails where it fails.
func TestReadSysctlReadsAsReadFile(t *testing.T) {
	for _, p := range []string{"/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/seccomp/actions_avail",
		"/proc/sys/kernel/osrelease", "/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/no-such-sysctl"} {
		t.Run(p, func(t *testing.T) {
			want, werr := os.ReadFile(p)
			got, err := readSysctl(p)
			if (err == nil) != (werr == nil) || string(got) != string(want) {
				t.Errorf("got %q, %v; want %q, %v", got, err, want, werr)
			}
		})
	}
}
