package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// rtPrivateEtc marks the child of TestCachedPlansFollowTheHostsEtc that
// runs in a mount namespace of its own, with a copy of /etc over /etc.
const rtPrivateEtc = "AIRLOCK_TEST_PRIVATE_ETC"

// boxEtcFile reads the box's /etc/<name> as the plan of b binds it: from
// the /etc view b holds (a directory of the kernel's view cache), else
// from the host file bound over /etc/<name> itself.
func boxEtcFile(t *testing.T, b *Box, viewDir, name string) string {
	t.Helper()
	for _, f := range b.keep {
		if within(f.Name(), viewDir) {
			data, err := os.ReadFile(filepath.Join("/proc/self/fd", strconv.Itoa(int(f.Fd())), name))
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		}
	}
	want := filepath.Join("/etc", name)
	for _, f := range b.keep {
		if within(want, f.Name()) && strings.HasPrefix(f.Name(), "/etc/") {
			data, err := os.ReadFile(filepath.Join("/proc/self/fd", strconv.Itoa(int(f.Fd())), strings.TrimPrefix(want, f.Name())))
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		}
	}
	t.Fatalf("the box binds no /etc/%s", name)
	return ""
}

// TestCachedPlansFollowTheHostsEtc plans the default box again and again
// in one process, as a per-user server or a node does, and changes the
// host's /etc between the plans in the ways a stamp or a name cache could
// miss: a plain file rewritten in place with bytes of the same size and
// its old modification time put back, a file of the same size and time
// renamed over it (often given the freed inode's number), a file bind
// mounted over it, a link swapped to a file of the same size and time, and
// a new name matching one of the view's globs. Each change is made
// straight after a plan that kept its view and /etc's names, within the
// racy window, and the next plan must show it, as a fresh process would.
// The host's /etc is a copy in a mount namespace of the test's own.
func TestCachedPlansFollowTheHostsEtc(t *testing.T) {
	if os.Getenv(rtPrivateEtc) == "" {
		testsupport.Require(t, testsupport.Root, testsupport.Bwrap, testsupport.Program("unshare"), testsupport.Program("cp"))
		cmd := exec.Command("unshare", "-m", "--propagation", "private", os.Args[0], "-test.run=^TestCachedPlansFollowTheHostsEtc$", "-test.v")
		cmd.Env = append(os.Environ(), rtPrivateEtc+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return
	}
	exe := testsupport.AirlockBin(t)
	// The window's length is not what is tested: a shorter one keeps the
	// test short, and every change below still falls within it.
	old := etcRacyWindow
	etcRacyWindow = 300 * time.Millisecond
	t.Cleanup(func() { etcRacyWindow = old })
	copyDir := filepath.Join(t.TempDir(), "etc")
	if out, err := exec.Command("cp", "-a", "/etc", copyDir).CombinedOutput(); err != nil {
		t.Fatalf("copy /etc: %v: %s", err, out)
	}
	if err := unix.Mount(copyDir, "/etc", "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount("/etc", unix.MNT_DETACH) })
	state := t.TempDir()
	wd := t.TempDir()
	spec := defaultSpec(wd, state)
	viewDir := filepath.Join(state, "etc")
	plan := func() *Box {
		t.Helper()
		b, err := Plan(spec, Tier1, exe)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	settle := func() { time.Sleep(etcRacyWindow + 200*time.Millisecond) }
	mustDo(t, os.WriteFile("/etc/protocols", []byte("127.0.0.1 aaaa\n"), 0o644))
	settle()
	if got := boxEtcFile(t, plan(), viewDir, "protocols"); got != "127.0.0.1 aaaa\n" {
		t.Fatalf("first plan: /etc/protocols = %q", got)
	}
	was, err := os.Stat("/etc/protocols")
	mustDo(t, err)
	// Two zone files of the same size and time, where no box writes, for
	// /etc/localtime's link to be swapped between.
	zones := t.TempDir()
	for _, z := range []string{"a", "b"} {
		mustDo(t, os.WriteFile(filepath.Join(zones, z), []byte("TZif zone "+z+"\n"), 0o644))
		mustDo(t, os.Chtimes(filepath.Join(zones, z), was.ModTime(), was.ModTime()))
	}
	os.Remove("/etc/localtime")
	mustDo(t, os.Symlink(filepath.Join(zones, "a"), "/etc/localtime"))

	steps := []struct {
		name   string
		change func() error
		want   string
	}{
		{"rewritten in place, same size and time", func() error {
			if err := os.WriteFile("/etc/protocols", []byte("127.0.0.1 bbbb\n"), 0o644); err != nil {
				return err
			}
			return os.Chtimes("/etc/protocols", was.ModTime(), was.ModTime())
		}, "127.0.0.1 bbbb\n"},
		{"renamed over, same size and time", func() error {
			tmp := "/etc/.protocols.new"
			if err := os.WriteFile(tmp, []byte("127.0.0.1 cccc\n"), 0o644); err != nil {
				return err
			}
			if err := os.Chtimes(tmp, was.ModTime(), was.ModTime()); err != nil {
				return err
			}
			return os.Rename(tmp, "/etc/protocols")
		}, "127.0.0.1 cccc\n"},
		{"bind mounted over", func() error {
			src := filepath.Join(t.TempDir(), "protocols")
			if err := os.WriteFile(src, []byte("127.0.0.1 dddd\n"), 0o644); err != nil {
				return err
			}
			if err := unix.Mount(src, "/etc/protocols", "", unix.MS_BIND, ""); err != nil {
				return err
			}
			t.Cleanup(func() { unix.Unmount("/etc/protocols", unix.MNT_DETACH) })
			return nil
		}, "127.0.0.1 dddd\n"},
	}
	for _, s := range steps {
		// A plan that keeps its view (the host settled), then the change
		// at once, then the plan that must see it.
		settle()
		plan()
		mustDo(t, s.change())
		if got := boxEtcFile(t, plan(), viewDir, "protocols"); got != s.want {
			t.Errorf("%s: the next plan's /etc/protocols = %q, want %q (a fresh process's)", s.name, got, s.want)
		}
	}

	// /etc/localtime's link swapped to a file of the same size and time.
	settle()
	if got := boxEtcFile(t, plan(), viewDir, "localtime"); got != "TZif zone a\n" {
		t.Fatalf("/etc/localtime = %q, want zone a", got)
	}
	mustDo(t, os.Symlink(filepath.Join(zones, "b"), "/etc/.localtime.new"))
	mustDo(t, os.Rename("/etc/.localtime.new", "/etc/localtime"))
	if got := boxEtcFile(t, plan(), viewDir, "localtime"); got != "TZif zone b\n" {
		t.Errorf("link swapped: the next plan's /etc/localtime = %q, want zone b", got)
	}

	// A new name of one of the globs (/etc/python3*), made straight after
	// the names were kept.
	settle()
	plan()
	mustDo(t, os.Mkdir("/etc/python3.99", 0o755))
	mustDo(t, os.WriteFile("/etc/python3.99/marker", []byte("new\n"), 0o644))
	if got := boxEtcFile(t, plan(), viewDir, "python3.99/marker"); got != "new\n" {
		t.Errorf("a new /etc/python3.99: got %q", got)
	}
	if !strings.Contains(strings.Join(etcPaths(), " "), "/etc/python3.99") {
		t.Error("etcPaths: /etc/python3.99 missing")
	}
}

// TestLaterKernelsWritableTreesWeighAtTheNextPlan: a process keeps a
// kernel (its Caches) while another kernel is made whose boxes may write
// an ancestor of a PATH directory holding bubblewrap and of the
// directory holding an airlock-box, named through a link. The first
// kernel's next plan weighs that tree: bubblewrap is not taken from the
// PATH directory, nor is that airlock-box run in its boxes, as a fresh
// process that read the record would decide.
func TestLaterKernelsWritableTreesWeighAtTheNextPlan(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a PATH directory only root could write")
	}
	root := t.TempDir()
	tools := filepath.Join(root, "tools")
	bin := filepath.Join(tools, "bin")
	mustDo(t, os.MkdirAll(bin, 0o755))
	data, err := os.ReadFile("/usr/bin/bwrap")
	if err != nil {
		t.Skipf("no /usr/bin/bwrap: %v", err)
	}
	mustDo(t, os.WriteFile(filepath.Join(bin, "bwrap"), data, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(bin, BoxBinary), []byte("x"), 0o755))
	link := filepath.Join(root, "link")
	mustDo(t, os.Symlink(tools, link))

	kept := NewCaches(CacheConfig{})
	wd := t.TempDir()
	p := &planner{box: &Box{}, spec: Spec{Workdir: wd, Caches: kept}}
	if got := findBwrap(bin, kept).Path; got != filepath.Join(bin, "bwrap") {
		t.Fatalf("before: bubblewrap %q, want the one in %s", got, bin)
	}
	if w := p.boxMayWrite(filepath.Join(bin, BoxBinary)); w != "" {
		t.Fatalf("before: %s", w)
	}

	// Another kernel of this process: its boxes may write tools, through
	// the link's spelling.
	NewCaches(CacheConfig{BoxWritable: []string{link}})
	if got := findBwrap(bin, kept).Path; got == filepath.Join(bin, "bwrap") {
		t.Errorf("after: the kept kernel still takes bubblewrap from %s, which another kernel's boxes may write", bin)
	}
	if w := p.boxMayWrite(filepath.Join(bin, BoxBinary)); !strings.Contains(w, link) {
		t.Errorf("after: boxMayWrite = %q, want it to name %s", w, link)
	}
}
