package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestScanTrees: the walk finds sockets and (in writable trees only)
// files with other names, skips the sockets the policy names, does not
// follow links, and stops at its budget saying where.
func TestScanTrees(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "ro", "deep", "er"), 0o755)
	os.MkdirAll(filepath.Join(root, "rw"), 0o755)
	listen := func(p string) {
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
	}
	listen(filepath.Join(root, "ro", "deep", "er", "agent.sock"))
	listen(filepath.Join(root, "ro", "named.sock"))
	os.WriteFile(filepath.Join(root, "store"), []byte("x"), 0o644)
	os.Link(filepath.Join(root, "store"), filepath.Join(root, "rw", "linked"))
	os.Link(filepath.Join(root, "store"), filepath.Join(root, "ro", "linked-ro"))
	os.WriteFile(filepath.Join(root, "rw", "plain"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(root, "ro"), filepath.Join(root, "rw", "link-to-ro"))

	named := map[string]bool{filepath.Join(root, "ro", "named.sock"): true}
	got := scanTrees([]scanRoot{{path: filepath.Join(root, "ro")}, {path: filepath.Join(root, "rw"), rw: true}}, named, scanBudget)
	if want := []string{filepath.Join(root, "ro", "deep", "er", "agent.sock")}; !equal(got.sockets, want) {
		t.Errorf("sockets %v, want %v", got.sockets, want)
	}
	if want := []string{filepath.Join(root, "rw", "linked")}; !equal(got.linked, want) {
		t.Errorf("linked %v, want %v (none of the read-only tree, nothing through the link)", got.linked, want)
	}
	if got.stopped != "" {
		t.Errorf("stopped at %s within the budget", got.stopped)
	}
	// A package linked whole from a cache is one bind of its directory;
	// a directory with one file of its own keeps per-file binds.
	pkg := filepath.Join(root, "rw", "site", "pkg")
	os.MkdirAll(filepath.Join(pkg, "sub"), 0o755)
	os.MkdirAll(filepath.Join(root, "rw", "mixed"), 0o755)
	for i, p := range []string{pkg + "/a.py", pkg + "/sub/b.py", root + "/rw/mixed/c.py"} {
		src := filepath.Join(root, "cache-"+string(rune('a'+i)))
		os.WriteFile(src, []byte("x"), 0o644)
		os.Link(src, p)
	}
	os.WriteFile(filepath.Join(root, "rw", "mixed", "own.py"), []byte("x"), 0o644)
	got = scanTrees([]scanRoot{{path: filepath.Join(root, "rw"), rw: true}}, nil, scanBudget)
	if want := []string{filepath.Join(root, "rw", "linked"), filepath.Join(root, "rw", "mixed", "c.py"), pkg}; !equal(sorted(got.linked), want) {
		t.Errorf("linked %v, want %v (site/pkg bound whole: everything in it is linked; site/ holds no file of its own)", sorted(got.linked), want)
	}

	small := scanTrees([]scanRoot{{path: filepath.Join(root, "ro")}}, nil, 2)
	deep := filepath.Join(root, "ro", "deep", "er", "agent.sock")
	if small.stopped == "" || contains(small.sockets, deep) {
		t.Errorf("budget 2: stopped %q, sockets %v; want a stop before the deep socket", small.stopped, small.sockets)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestScanTime measures the walk on the largest tree a host surely has,
// /usr, as a read grant and as a writable one (which lstats every regular
// file): the figures behind scanBudget's comment.
func TestScanTime(t *testing.T) {
	for _, rw := range []bool{false, true} {
		start := time.Now()
		got := scanTrees([]scanRoot{{path: "/usr", rw: rw}}, nil, scanBudget)
		t.Logf("/usr writable=%v: %d entries in %v (stopped at %q)", rw, got.entries, time.Since(start), got.stopped)
	}
	if Probe().Tier() < Tier1 {
		return
	}
	exe, _ := os.Executable()
	for _, read := range [][]string{nil, {"/usr/lib"}} {
		start := time.Now()
		b, err := Plan(Spec{Workdir: t.TempDir(), Read: read}, Tier1, exe)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("plan with read grants %v: %v", read, time.Since(start))
		b.Close()
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func sorted(l []string) []string {
	out := append([]string(nil), l...)
	sort.Strings(out)
	return out
}
