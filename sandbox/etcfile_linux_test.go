package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// statOnly is the world's file as etcFileAt gives a regular file directly
// in /etc: its stat, and no descriptor.
func (w etcWorld) statOnly(t *testing.T) etcSource {
	t.Helper()
	real := filepath.Join(w.src, "file")
	var st unix.Stat_t
	if err := unix.Lstat(real, &st); err != nil {
		t.Fatal(err)
	}
	return etcSource{box: "/etc/file", st: st, pn: &pinned{real: real, dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode, st: st}}
}

// planStatOnly plans the world's view with its file stat only.
func (w etcWorld) planStatOnly(t *testing.T) ([]etcSource, *planner, error) {
	t.Helper()
	p := &planner{box: &Box{}, bw: bwrapInfo{BindFD: true}, spec: Spec{Caches: w.caches}}
	dir, err := pin(filepath.Join(w.src, "dir"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srcs := []etcSource{w.statOnly(t), {box: "/etc/ssl/dir", pn: dir, st: dir.st}}
	t.Cleanup(func() {
		for _, s := range srcs {
			s.pn.f.Close()
		}
		p.box.Close()
	})
	return srcs, p, p.etcView(nil, srcs, []etcGen{{"/etc/hostname", "airlock\n"}})
}

// TestEtcViewOfStatOnlySources: a source known by its stat alone is
// opened only to be copied. The view made from it holds its content; a
// later plan that finds the view as kept opens no descriptor of it; and
// a file that changed between its stat and the copy gives no view, so
// no view is made of content its key does not name.
func TestEtcViewOfStatOnlySources(t *testing.T) {
	w := newEtcWorld(t)
	srcs, p, err := w.planStatOnly(t)
	if err != nil {
		t.Fatal(err)
	}
	if srcs[0].pn.f == nil {
		t.Fatal("the view was built, yet the stat-only source was never opened to be copied")
	}
	view := ""
	for _, o := range p.ops {
		if o.dest == "/etc" {
			view = o.pn.real
		}
	}
	if got := readView(t, view, "file"); got != "one\n" {
		t.Errorf("file = %q, want the source's", got)
	}

	again, _, err := w.planStatOnly(t)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].pn.f != nil {
		t.Error("the kept view was checked with a descriptor of the stat-only source: want its stat alone")
	}

	// Stat, then changed, then the view (none kept) is built.
	os.RemoveAll(w.cache)
	stale := w.statOnly(t)
	if err := os.WriteFile(filepath.Join(w.src, "file"), []byte("two, longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p3 := &planner{box: &Box{}, bw: bwrapInfo{BindFD: true}, spec: Spec{Caches: w.caches}}
	t.Cleanup(func() { p3.box.Close() })
	err = p3.etcView(nil, []etcSource{stale}, nil)
	var nv *errNoView
	if !errors.As(err, &nv) || !strings.Contains(err.Error(), "changed while it was planned") {
		t.Fatalf("view of a file changed after its stat: got %v, want no view", err)
	}
}

// TestEtcFileAtTakesOnlyPlainFiles: only a regular file directly in the
// host's own /etc is known by its stat alone; a directory, a file
// beneath one and a link are pinned.
func TestEtcFileAtTakesOnlyPlainFiles(t *testing.T) {
	etcDir, err := pin("/etc", nil)
	if err != nil || etcDir.real != "/etc" {
		t.Skipf("this host's /etc is not a directory of its own: %v", err)
	}
	defer etcDir.f.Close()
	for _, f := range etcPaths() {
		t.Run(f, func(t *testing.T) {
			var st unix.Stat_t
			lerr := unix.Lstat(f, &st)
			s, found := etcFileAt(etcDir, f)
			want := etcOther
			switch {
			case filepath.Dir(f) != "/etc":
			case lerr == unix.ENOENT:
				want = etcMissing
			case lerr == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
				want = etcPlain
			}
			if found != want {
				t.Fatalf("etcFileAt: got %v, want %v (mode %o, %v)", found, want, st.Mode, lerr)
			}
			if found == etcPlain && (s.pn.f != nil || s.st.Ino != st.Ino || s.pn.real != f) {
				t.Errorf("got %+v, want the stat of %s and no descriptor", s.pn, f)
			}
		})
	}
	if _, found := etcFileAt(nil, "/etc/hostname"); found != etcOther {
		t.Error("no pinned /etc: got a stat-only source")
	}
}
