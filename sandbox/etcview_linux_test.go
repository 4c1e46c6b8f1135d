package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// etcWorld is a host tree standing in for the host's /etc files: a file,
// a directory with a file, a link and a subdirectory, and the cache
// directory the views go to.
type etcWorld struct {
	src, cache string
	// caches are a kernel's, keeping its views in cache.
	caches *Caches
}

func newEtcWorld(t *testing.T) etcWorld {
	t.Helper()
	root := t.TempDir()
	w := etcWorld{src: filepath.Join(root, "host"), cache: filepath.Join(root, "state", "etc-views")}
	for _, d := range []string{"dir/sub"} {
		if err := os.MkdirAll(filepath.Join(w.src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{"file": "one\n", "dir/f": "in dir\n", "dir/sub/g": "deeper\n"} {
		if err := os.WriteFile(filepath.Join(w.src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/usr/share/x", filepath.Join(w.src, "dir", "link")); err != nil {
		t.Fatal(err)
	}
	old := etcRacyWindow
	etcRacyWindow = 0 // the test changes its sources within the window
	t.Cleanup(func() { etcRacyWindow = old })
	w.caches = NewCaches(CacheConfig{EtcViewDir: w.cache})
	return w
}

// plan binds the world's sources as /etc/file and /etc/ssl/dir, and
// returns the view's directory (its host path) or the error.
func (w etcWorld) plan(t *testing.T) (string, *Box, error) {
	t.Helper()
	p := &planner{box: &Box{}, bw: bwrapInfo{BindFD: true}, spec: Spec{Caches: w.caches}}
	var srcs []etcSource
	for _, bh := range [][2]string{{"/etc/file", "file"}, {"/etc/ssl/dir", "dir"}} {
		box, host := bh[0], bh[1]
		pn, err := pin(filepath.Join(w.src, host), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := etcSource{box: box, pn: pn}
		if err := unix.Fstat(int(pn.f.Fd()), &s.st); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, s)
	}
	t.Cleanup(func() {
		for _, s := range srcs {
			s.pn.f.Close()
		}
	})
	err := p.etcView(nil, srcs, []etcGen{{"/etc/hostname", "airlock\n"}})
	t.Cleanup(func() { p.box.Close() })
	if err != nil {
		return "", p.box, err
	}
	for _, o := range p.ops {
		if o.dest == "/etc" {
			return o.pn.real, p.box, nil
		}
	}
	t.Fatalf("no bind at /etc in %v", p.ops)
	return "", nil, nil
}

func readView(t *testing.T, view, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(view, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func inodeOf(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestEtcViewHoldsTheSources(t *testing.T) {
	w := newEtcWorld(t)
	view, _, err := w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"file": "one\n", "ssl/dir/f": "in dir\n", "ssl/dir/sub/g": "deeper\n", "hostname": "airlock\n"} {
		if got := readView(t, view, rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(view, "ssl/dir/link")); err != nil || l != "/usr/share/x" {
		t.Errorf("link = %q, %v; want /usr/share/x", l, err)
	}
	for rel, want := range map[string]os.FileMode{".": 0o755, "ssl": 0o755, "ssl/dir": 0o755, "file": 0o644, "hostname": 0o444} {
		fi, err := os.Lstat(filepath.Join(view, rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %o, want %o", rel, fi.Mode().Perm(), want)
		}
	}
	src, _ := os.Stat(filepath.Join(w.src, "dir", "f"))
	if fi, _ := os.Stat(filepath.Join(view, "ssl/dir/f")); !fi.ModTime().Equal(src.ModTime()) {
		t.Errorf("copy's time %v, source's %v", fi.ModTime(), src.ModTime())
	}
}

func TestEtcViewReusedUntilASourceChanges(t *testing.T) {
	w := newEtcWorld(t)
	first, _, err := w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	ino := inodeOf(t, first)
	again, _, err := w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	if again != first || inodeOf(t, again) != ino {
		t.Fatalf("an unchanged host made a new view: %s (inode %d), was %s (inode %d)", again, inodeOf(t, again), first, ino)
	}
	// Changed in place, deep in a directory: the directory's own times
	// stay, the file's record does not.
	if err := os.WriteFile(filepath.Join(w.src, "dir", "sub", "g"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	view, _, err := w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := readView(t, view, "ssl/dir/sub/g"); got != "changed\n" {
		t.Fatalf("after the change the view holds %q", got)
	}
	// A file added to a source's directory.
	if err := os.WriteFile(filepath.Join(w.src, "dir", "new"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	view, _, err = w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := readView(t, view, "ssl/dir/new"); got != "new\n" {
		t.Fatalf("the added file reads %q", got)
	}
}

// TestEtcViewSharedBySidePlans: plans made at the same time in one
// process that find no view (a pool starting boxes side by side) share
// the one view built, so their boxes are the same (Fingerprint); each
// holds it whole, and a later change still makes a new one.
func TestEtcViewSharedBySidePlans(t *testing.T) {
	w := newEtcWorld(t)
	const n = 8
	type got struct {
		view string
		ino  uint64
		err  error
	}
	out := make(chan got, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			view, _, err := w.plan(t)
			var st unix.Stat_t
			if err == nil {
				err = unix.Lstat(view, &st)
			}
			out <- got{view, st.Ino, err}
		}()
	}
	close(start)
	var first got
	for i := 0; i < n; i++ {
		g := <-out
		if g.err != nil {
			t.Fatal(g.err)
		}
		if i == 0 {
			first = g
		} else if g.view != first.view || g.ino != first.ino {
			t.Errorf("plans side by side bound %s (inode %d) and %s (inode %d), want one view", first.view, first.ino, g.view, g.ino)
		}
		if got := readView(t, g.view, "ssl/dir/f"); got != "in dir\n" {
			t.Errorf("a plan's view holds %q, want the source's", got)
		}
	}
	if err := os.WriteFile(filepath.Join(w.src, "file"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	view, _, err := w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := readView(t, view, "file"); got != "changed\n" {
		t.Errorf("after a change the view holds %q", got)
	}
}

// planUntrusted plans a box, makes its view's record one others may write,
// and plans again while the first box (and its lock on the view) lives:
// the first view's path and inode, and the second plan's view.
func (w etcWorld) planUntrusted(t *testing.T) (first string, ino uint64, again string) {
	t.Helper()
	first, _, err := w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	ino = inodeOf(t, first)
	recs, _ := filepath.Glob(filepath.Join(w.cache, "*.rec"))
	if len(recs) != 1 {
		t.Fatalf("records %v, want one", recs)
	}
	if err := os.Chmod(recs[0], 0o666); err != nil {
		t.Fatal(err)
	}
	if again, _, err = w.plan(t); err != nil {
		t.Fatal(err)
	}
	return first, ino, again
}

// A record that is not airlock's own (another user's, or writable by
// others) does not vouch for its view: the view is made again.
func TestEtcViewRecordNotOwnIsIgnored(t *testing.T) {
	w := newEtcWorld(t)
	_, ino, again := w.planUntrusted(t)
	if inodeOf(t, again) == ino {
		t.Fatal("a view was bound on the word of a record others may write")
	}
}

// A view changed after it was made (by anyone who could write the state
// directory) is never bound: the next plan makes it again.
func TestEtcViewChangedIsMadeAgain(t *testing.T) {
	w := newEtcWorld(t)
	view, _, err := w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(view, "ssl", "dir", "f")
	if err := os.Chmod(planted, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, []byte("planted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, _, err := w.plan(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := readView(t, again, "ssl/dir/f"); got != "in dir\n" {
		t.Fatalf("the box's /etc holds %q, what was planted in the view", got)
	}
}

func TestEtcViewRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, w etcWorld)
	}{
		{"a pipe in a source", func(t *testing.T, w etcWorld) {
			if err := unix.Mkfifo(filepath.Join(w.src, "dir", "fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a cache directory others may write", func(t *testing.T, w etcWorld) {
			// The rule on others' directories is root's (privfile's
			// StrictModes).
			testsupport.Require(t, testsupport.Root)
			if err := os.MkdirAll(w.cache, 0o700); err != nil {
				t.Fatal(err)
			}
			os.Chmod(w.cache, 0o777)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newEtcWorld(t)
			tt.setup(t, w)
			_, _, err := w.plan(t)
			var nv *errNoView
			if !errors.As(err, &nv) {
				t.Fatalf("etcView = %v, want a refusal (bound file by file)", err)
			}
		})
	}
}

func TestEtcViewNotInAWritableDirectory(t *testing.T) {
	w := newEtcWorld(t)
	p := &planner{box: &Box{}, bw: bwrapInfo{BindFD: true}, writable: []string{filepath.Dir(w.cache)}, spec: Spec{Caches: w.caches}}
	err := p.etcView(nil, nil, []etcGen{{"/etc/hostname", "airlock\n"}})
	var nv *errNoView
	if !errors.As(err, &nv) {
		t.Fatalf("a cache in a writable directory gave %v, want a refusal", err)
	}
	p.box.Close()
}

// Run as another user airlock cannot keep a source's owner; the copy's
// owner bits are what applied to it on the source.
func TestEtcViewMode(t *testing.T) {
	c := &etcCopier{euid: 1000, groups: map[uint32]bool{1000: true, 50: true}}
	tests := []struct {
		name     string
		uid, gid uint32
		mode     uint32
		want     uint32
	}{
		{"own file", 1000, 1000, 0o640, 0o640},
		{"root's, read by others", 0, 0, 0o644, 0o444},
		{"root's, others may run it", 0, 0, 0o755, 0o555},
		{"group bits apply, not others'", 0, 50, 0o604, 0o004},
		{"others may not run what the owner may", 0, 0, 0o744, 0o444},
		{"group may read", 0, 50, 0o640, 0o440},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &unix.Stat_t{Uid: tt.uid, Gid: tt.gid, Mode: unix.S_IFREG | tt.mode}
			if got := c.mode(st); got != tt.want {
				t.Errorf("mode = %o, want %o", got, tt.want)
			}
		})
	}
	root := &etcCopier{euid: 0}
	if got := root.mode(&unix.Stat_t{Uid: 5, Mode: unix.S_IFREG | 0o4751}); got != 0o4751 {
		t.Errorf("under root mode = %o, want the source's 4751", got)
	}
}

// The racy window is real: a source changed a moment ago is not copied
// into a view that would outlive a second change within the same tick.
func TestEtcViewNotMadeRightAfterAChange(t *testing.T) {
	w := newEtcWorld(t)
	etcRacyWindow = time.Hour
	_, _, err := w.plan(t)
	var nv *errNoView
	if !errors.As(err, &nv) {
		t.Fatalf("a view of files changed a moment ago: %v, want a refusal", err)
	}
}

// Something else mounted beneath /etc (a read grant there) needs its mount
// point in the box's /etc, which a read-only view does not have: /etc is
// then bound file by file, and the grant is still bound.
func TestEtcViewGivesWayToABindBeneathEtc(t *testing.T) {
	if r := Probe(); r.Tier() < Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	caches := NewCaches(CacheConfig{EtcViewDir: filepath.Join(t.TempDir(), "etc-views")})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	plan := func(read []string) []string {
		b, err := Plan(Spec{Workdir: t.TempDir(), Read: read, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}, Caches: caches}, Tier1, exe)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		var dests []string
		for i, a := range b.options {
			if (a == "--ro-bind-fd" || a == "--ro-bind") && i+2 < len(b.options) {
				dests = append(dests, b.options[i+2])
			}
		}
		return dests
	}
	has := func(dests []string, d string) bool {
		for _, x := range dests {
			if x == d {
				return true
			}
		}
		return false
	}
	if d := plan(nil); !has(d, "/etc") || has(d, "/etc/ld.so.cache") {
		t.Fatalf("without a grant beneath /etc the plan binds %v, want /etc as one view", d)
	}
	if _, err := os.Stat("/etc/ld.so.cache"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no /etc/ld.so.cache here: CI's Debian host has one")
		}
		t.Skip("no /etc/ld.so.cache here")
	}
	d := plan([]string{"/etc/ld.so.cache"})
	if has(d, "/etc") || !has(d, "/etc/ld.so.cache") {
		t.Fatalf("with a grant beneath /etc the plan binds %v, want /etc file by file", d)
	}
}

// TestEtcViewsWithoutRecordArePruned: a view whose record was never
// written (the run was killed between placing the view and writing its
// record, or the write failed) is still counted and removed, so the cache
// stays bounded however often that happens.
func TestEtcViewsWithoutRecordArePruned(t *testing.T) {
	w := newEtcWorld(t)
	if _, _, err := w.plan(t); err != nil {
		t.Fatal(err)
	}
	// Views left without a record by runs of other hosts' /etc, a while ago.
	long := time.Now().Add(-time.Hour)
	for i := 0; i < 3*etcViewsKept; i++ {
		d := filepath.Join(w.cache, fmt.Sprintf("%032x", i+1))
		if err := os.MkdirAll(filepath.Join(d, "ssl"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "hostname"), []byte("old\n"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, long, long); err != nil {
			t.Fatal(err)
		}
	}
	// A source changes: a new view is made, and the cache pruned.
	if err := os.WriteFile(filepath.Join(w.src, "file"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.plan(t); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(w.cache)
	if err != nil {
		t.Fatal(err)
	}
	views := 0
	for _, n := range names {
		if n.IsDir() {
			views++
		}
	}
	if views > etcViewsKept {
		t.Errorf("%d views kept in %s, want at most %d", views, w.cache, etcViewsKept)
	}
}

// TestEtcViewOpensNoSpecialFile: a source that is neither a file nor a
// directory (a pipe, a device, through a link) is never opened to be
// copied: opening a device may act (a tape rewinds, a watchdog starts),
// opening a pipe wakes the writer waiting on it. The view is refused
// before any open, and the source is bound as it is.
func TestEtcViewOpensNoSpecialFile(t *testing.T) {
	w := newEtcWorld(t)
	fifo := filepath.Join(w.src, "file")
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	go func() {
		// Blocks until someone opens the pipe to read.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			close(opened)
			f.Close()
		}
	}()
	_, _, err := w.plan(t)
	var nv *errNoView
	if !errors.As(err, &nv) {
		t.Fatalf("a pipe as a source: %v, want no view", err)
	}
	select {
	case <-opened:
		t.Fatal("the pipe was opened to be copied")
	case <-time.After(200 * time.Millisecond):
	}
	// Release the writer.
	if f, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// A view a run is binding is never moved from under it: bubblewrap mounts
// a bind by its path and checks the mount is the descriptor's, so a second
// run that makes the view again (here: the record no longer vouches for
// it) while the first still holds it would fail the first run's box with
// "Race condition binding dirfd". The second run binds a view of its own.
func TestEtcViewHeldIsNotMoved(t *testing.T) {
	w := newEtcWorld(t)
	first, ino, again := w.planUntrusted(t)
	if inodeOf(t, first) != ino {
		t.Fatalf("the view the first run binds was moved: %s is now inode %d, was %d", first, inodeOf(t, first), ino)
	}
	if again == first || inodeOf(t, again) == ino {
		t.Fatalf("the second run bound %s, the view whose record it did not trust", again)
	}
	if got := readView(t, again, "file"); got != "one\n" {
		t.Fatalf("the second run's view holds %q", got)
	}
}

// TestEtcViewSeesEveryChangeOfASource: the view is made again after any
// change of a source, at its top (whose stamp is checked against pin's
// own stat) or beneath it: content rewritten at the same size, the file
// replaced (a new inode), a link on the way to it re-pointed at a copy
// with the same content, a link inside a directory re-pointed, a
// directory replaced.
func TestEtcViewSeesEveryChangeOfASource(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, src string)
		rel    string // read in the view after the change
		want   string
	}{
		{"top file rewritten, same size", func(t *testing.T, src string) {
			write(t, filepath.Join(src, "file"), "two\n")
		}, "file", "two\n"},
		{"top file replaced", func(t *testing.T, src string) {
			write(t, filepath.Join(src, "file.new"), "new\n")
			rename(t, filepath.Join(src, "file.new"), filepath.Join(src, "file"))
		}, "file", "new\n"},
		{"top file reached by a re-pointed link", func(t *testing.T, src string) {
			// file -> file.a at the start (see below); now -> file.b,
			// the same content and times.
			write(t, filepath.Join(src, "file.b"), "one\n")
			st, err := os.Stat(filepath.Join(src, "file.a"))
			if err != nil {
				t.Fatal(err)
			}
			os.Chtimes(filepath.Join(src, "file.b"), st.ModTime(), st.ModTime())
			relink(t, "file.b", filepath.Join(src, "file"))
		}, "file", "one\n"},
		{"link inside a directory re-pointed", func(t *testing.T, src string) {
			relink(t, "/usr/share/y", filepath.Join(src, "dir", "link"))
		}, "", ""},
		{"directory replaced", func(t *testing.T, src string) {
			if err := os.MkdirAll(filepath.Join(src, "dir.new"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(src, "dir.new", "f"), "in new dir\n")
			rename(t, filepath.Join(src, "dir"), filepath.Join(src, "dir.old"))
			rename(t, filepath.Join(src, "dir.new"), filepath.Join(src, "dir"))
		}, "ssl/dir/f", "in new dir\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newEtcWorld(t)
			// The top file is reached through a link for every case.
			rename(t, filepath.Join(w.src, "file"), filepath.Join(w.src, "file.a"))
			relink(t, "file.a", filepath.Join(w.src, "file"))
			first, _, err := w.plan(t)
			if err != nil {
				t.Fatal(err)
			}
			if again, _, err := w.plan(t); err != nil || again != first {
				t.Fatalf("an unchanged host made a new view: %s, %v; was %s", again, err, first)
			}
			ino := inodeOf(t, first)
			tt.change(t, w.src)
			view, _, err := w.plan(t)
			if err != nil {
				t.Fatal(err)
			}
			if view == first && inodeOf(t, view) == ino {
				t.Fatalf("after the change the view made before is bound again")
			}
			if tt.rel != "" {
				if got := readView(t, view, tt.rel); got != tt.want {
					t.Fatalf("%s reads %q, want %q", tt.rel, got, tt.want)
				}
			} else if l, err := os.Readlink(filepath.Join(view, "ssl/dir/link")); err != nil || l != "/usr/share/y" {
				t.Fatalf("link = %q, %v; want /usr/share/y", l, err)
			}
		})
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// relink points the link at p to target, replacing it in one rename.
func relink(t *testing.T, target, p string) {
	t.Helper()
	tmp := p + ".tmp"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	rename(t, tmp, p)
}

// TestEtcRecordRead: a record is used only as encodeRecord wrote it for
// this key and these sources, and its stamps are read as written.
func TestEtcRecordRead(t *testing.T) {
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		t.Fatal(err)
	}
	rec := etcRecord{Key: "k", Sources: [][]etcStamp{{stampOf("", &st)}, {stampOf("", &st), stampOf("a/b", &st)}}, View: []etcStamp{stampOf("", &st)}}
	good, ok := encodeRecord(rec)
	if !ok {
		t.Fatal("encodeRecord refused a plain record")
	}
	body, ok := recordStamps(string(good), "k", 2)
	if !ok {
		t.Fatalf("recordStamps refused %q", good)
	}
	var got []string
	eachStamp(body, 2, func(src int, rel, id string) bool {
		got = append(got, fmt.Sprintf("%d %s %s", src, rel, id))
		return true
	})
	id := stampOf("", &st).ID
	want := []string{"0  " + id, "1  " + id, "1 a/b " + id, "-1  " + id}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stamps %q, want %q", got, want)
	}
	if !stampHolds(-1, &st, "", id) || stampHolds(-1, &st, "", id+"0") {
		t.Fatal("stampHolds does not compare the identity")
	}
	line := func(s string) string { return "S0\t" + id + "\t" + s + "\n" }
	head := etcViewVersion + "\nk\n"
	tests := []struct{ name, data, key string }{
		{"another key", string(good), "other"},
		{"another version", "airlock-etc-view-0\nk\n" + string(good)[len(head):], "k"},
		{"cut short", string(good)[:len(good)-1], "k"},
		{"a source without stamps", head + line("") + "V\t" + id + "\t\n", "k"},
		{"no stamp of the view", head + line("") + "S1\t" + id + "\t\n", "k"},
		{"a source beyond the list", string(good) + "S2\t" + id + "\t\n", "k"},
		{"an unknown tag", string(good) + "X\t" + id + "\t\n", "k"},
		{"a line without its path", string(good) + "V\t" + id + "\n", "k"},
		{"an empty line", string(good) + "\n", "k"},
		{"nothing but the head", head, "k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := recordStamps(tt.data, tt.key, 2); ok {
				t.Fatalf("recordStamps took %q", tt.data)
			}
		})
	}
}

// Checking a kept view allocates a fixed amount, not a share of every
// stamp: each allocation is memory first touched, a page fault on a
// start.
func TestEtcViewCheckAllocations(t *testing.T) {
	w := newEtcWorld(t)
	if _, _, err := w.plan(t); err != nil {
		t.Fatal(err)
	}
	recs, _ := filepath.Glob(filepath.Join(w.cache, "*.rec"))
	if len(recs) != 1 {
		t.Fatalf("records %v, want one", recs)
	}
	data, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSuffix(filepath.Base(recs[0]), ".rec")
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		t.Fatal(err)
	}
	s := string(data)
	n := testing.AllocsPerRun(20, func() {
		body, _ := recordStamps(s, key, 2)
		eachStamp(body, 2, func(src int, rel, id string) bool {
			stampHolds(-1, &st, "", id)
			return true
		})
	})
	if n > 2 {
		t.Fatalf("reading a record's stamps allocates %v times, want at most 2", n)
	}
}
