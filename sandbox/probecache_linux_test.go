package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeBwrap writes an executable named bwrap whose bytes carry the given
// option names and version, as findBwrap reads them.
func fakeBwrap(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// useCache is a kernel's caches keeping the probe's readings in path, as a
// new process makes them: nothing in memory yet.
func useCache(path string) *Caches { return NewCaches(CacheConfig{ProbeFile: path}) }

// TestProbeCacheKeyedByIdentity: what was read of bubblewrap is kept across
// processes (a new load of the file) and read again once the binary
// changes.
func TestProbeCacheKeyedByIdentity(t *testing.T) {
	bin, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	fakeBwrap(t, bin, "bubblewrap 0.11.0 --clearenv")
	cache := filepath.Join(state, "probe-cache.json")
	c := useCache(cache)
	if got := findBwrap(bin, c); got.Version != "0.11.0" || got.BindFD || !got.ClearEnv {
		t.Fatalf("first read: got %+v", got)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("the cache was not written: %v", err)
	}
	// As a new process would: the file, not the memory.
	c = useCache(cache)
	var f probeCacheFile
	data, _ := os.ReadFile(cache)
	if err := json.Unmarshal(data, &f); err != nil || len(f.Bwrap) != 1 {
		t.Fatalf("cache file: %s, %v; want one bubblewrap entry", data, err)
	}
	if got := findBwrap(bin, c); got.Version != "0.11.0" {
		t.Fatalf("from the cache: got %+v", got)
	}
	// A changed binary (new size, times, inode) is read afresh.
	time.Sleep(10 * time.Millisecond)
	os.Remove(filepath.Join(bin, "bwrap"))
	fakeBwrap(t, bin, "bubblewrap 0.12.0 --ro-bind-fd --disable-userns --clearenv")
	if got := findBwrap(bin, c); got.Version != "0.12.0" || !got.BindFD || !got.DisableUserns {
		t.Fatalf("after the binary changed: got %+v, want it read again", got)
	}
}

// TestProbeCacheNotTrustedUnlessOwn: a cache file someone else could have
// written (writable by others, a link to one elsewhere) is ignored: the
// binary is read. The planted content is first shown to be taken when it
// is airlock's own, so what is refused is the file's standing, not its
// form.
func TestProbeCacheNotTrustedUnlessOwn(t *testing.T) {
	bin, state := t.TempDir(), t.TempDir()
	p := fakeBwrap(t, bin, "bubblewrap 0.8.0")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	key, ok := identity(p, st)
	if !ok {
		t.Fatal("no identity")
	}
	// The lie: an old bubblewrap claiming options it does not have.
	lie, _ := json.Marshal(probeCacheFile{Bwrap: map[string]BwrapReport{key: {Path: p, Version: "0.99.0", BindFD: true, DisableUserns: true, ClearEnv: true}}})
	cache := filepath.Join(state, "probe-cache.json")
	// reload forgets the cache in memory, as a new process starts.
	var c *Caches
	reload := func() { c = useCache(cache) }
	plant := func(mode os.FileMode) {
		os.Remove(cache)
		if err := os.WriteFile(cache, lie, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(cache, mode)
		reload()
	}
	plant(0o600)
	if got := findBwrap(bin, c); got.Version != "0.99.0" {
		t.Fatalf("airlock's own cache file: got %+v, want its entry used", got)
	}
	for _, tc := range []struct {
		name  string
		plant func()
	}{
		{"writable by others", func() { plant(0o666) }},
		{"writable by the group", func() { plant(0o620) }},
		{"a link to a file elsewhere", func() {
			other := filepath.Join(t.TempDir(), "elsewhere.json")
			os.WriteFile(other, lie, 0o600)
			os.Remove(cache)
			if err := os.Symlink(other, cache); err != nil {
				t.Fatal(err)
			}
			reload()
		}},
		{"a second name of another file", func() {
			other := filepath.Join(state, "other.json")
			os.Remove(other)
			os.WriteFile(other, lie, 0o600)
			os.Remove(cache)
			if err := os.Link(other, cache); err != nil {
				t.Fatal(err)
			}
			reload()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.plant()
			if got := findBwrap(bin, c); got.Version != "0.8.0" || got.BindFD || got.DisableUserns || got.ClearEnv {
				t.Fatalf("got %+v, want the binary read (0.8.0, none of the options)", got)
			}
		})
	}
}
