//go:build linux

package privfile

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
)

// bothWays runs f with openat2 and with the per-component openat walk.
func bothWays(t *testing.T, f func(t *testing.T)) {
	for _, fallback := range []bool{false, true} {
		name := "openat2"
		if fallback {
			name = "openat"
		}
		t.Run(name, func(t *testing.T) {
			if !fallback && !haveOpenat2() {
				skipOrFail(t, "the kernel has no openat2")
			}
			old := noOpenat2.Load()
			noOpenat2.Store(fallback)
			t.Cleanup(func() { noOpenat2.Store(old) })
			f(t)
		})
	}
}

func haveOpenat2() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root")
	}
}

// nonStrict runs the rest of the test as a non-root airlock would check.
func nonStrict(t *testing.T) {
	old := strictModes
	strictModes = func(int) bool { return false }
	t.Cleanup(func() { strictModes = old })
}

// world is a temporary tree: dir (0700, where airlock writes), outside
// with a victim file airlock must never touch.
type world struct {
	dir, outside, victim string
}

const victimText = "victim: untouched\n"

func newWorld(t *testing.T) world {
	t.Helper()
	base := t.TempDir()
	w := world{dir: filepath.Join(base, "work"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{w.dir, w.outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.victim = filepath.Join(w.outside, "victim")
	if err := os.WriteFile(w.victim, []byte(victimText), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// untouched fails the test when the victim changed or outside got a new
// entry.
func (w world) untouched(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(w.victim)
	if err != nil || string(b) != victimText {
		t.Fatalf("victim: got %q, %v; want it untouched", b, err)
	}
	ents, _ := os.ReadDir(w.outside)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("outside holds %v; want only the victim", names)
	}
}

func wantRefused(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error; want a refusal mentioning %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v; want it to mention %q", err, want)
	}
}

// TestPlainWriteFollowsPlantedLink shows the attack against the old shape
// (os.WriteFile of path+".tmp", then rename): the victim is overwritten.
func TestPlainWriteFollowsPlantedLink(t *testing.T) {
	w := newWorld(t)
	report := filepath.Join(w.dir, "r.json")
	if err := os.Symlink(w.victim, report+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report+".tmp", []byte("pwned\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(w.victim); string(b) != "pwned\n" {
		t.Fatalf("the old shape did not write through the link (victim %q): the test shows nothing", b)
	}
}

func TestWriteFile(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		tests := []struct {
			name  string
			plant func(w world, path string)
		}{
			{"new file", func(world, string) {}},
			{"link at the old temporary name", func(w world, path string) { os.Symlink(w.victim, path+".tmp") }},
			{"link at the name", func(w world, path string) { os.Symlink(w.victim, path) }},
			{"hard link at the name", func(w world, path string) { os.Link(w.victim, path) }},
			{"dangling link at the name", func(w world, path string) { os.Symlink(filepath.Join(w.outside, "new"), path) }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				w := newWorld(t)
				path := filepath.Join(w.dir, "r.json")
				tt.plant(w, path)
				if err := WriteFile(path, []byte("report\n"), 0o600, Options{}); err != nil {
					t.Fatal(err)
				}
				st, err := os.Lstat(path)
				if err != nil {
					t.Fatal(err)
				}
				if !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
					t.Errorf("%s: got mode %v, want a regular file 0600", path, st.Mode())
				}
				if b, _ := os.ReadFile(path); string(b) != "report\n" {
					t.Errorf("%s: got %q", path, b)
				}
				if st.Sys().(*syscall.Stat_t).Nlink != 1 {
					t.Errorf("%s: got %d links, want 1", path, st.Sys().(*syscall.Stat_t).Nlink)
				}
				ents, _ := os.ReadDir(w.dir)
				for _, e := range ents {
					if strings.Contains(e.Name(), ".tmp-") {
						t.Errorf("temporary file %s left behind", e.Name())
					}
				}
				w.untouched(t)
			})
		}
	})
}

func TestWriteFileModeIgnoresUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	w := newWorld(t)
	path := filepath.Join(w.dir, "r.json")
	if err := WriteFile(path, nil, 0o640, Options{}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("got mode %v, want 0640", st.Mode().Perm())
	}
}

// TestRefuses: every way the path could be steered is refused, nothing is
// written, and the message names the place and the fix.
func TestRefuses(t *testing.T) {
	requireRoot(t)
	bothWays(t, func(t *testing.T) {
		tests := []struct {
			name string
			// setup returns the path to write and the options.
			setup func(t *testing.T, w world) (string, Options)
			want  string
		}{
			{"file in a box-writable directory", func(t *testing.T, w world) (string, Options) {
				return filepath.Join(w.dir, "r.json"), Options{BoxWritable: []string{w.dir}}
			}, "writable by the box"},
			{"file beneath a box-writable directory", func(t *testing.T, w world) (string, Options) {
				os.Mkdir(filepath.Join(w.dir, "sub"), 0o700)
				return filepath.Join(w.dir, "sub", "r.json"), Options{BoxWritable: []string{w.dir}}
			}, "writable by the box"},
			{"box path spelt through a link", func(t *testing.T, w world) (string, Options) {
				alias := filepath.Join(filepath.Dir(w.dir), "alias")
				os.Symlink(w.dir, alias)
				return filepath.Join(w.dir, "r.json"), Options{BoxWritable: []string{alias}}
			}, "writable by the box"},
			{"box path is the file", func(t *testing.T, w world) (string, Options) {
				p := filepath.Join(w.dir, "r.json")
				return p, Options{BoxWritable: []string{p}}
			}, "writable by the box"},
			{"box path is the file by another name", func(t *testing.T, w world) (string, Options) {
				p := filepath.Join(w.dir, "r.json")
				os.WriteFile(w.dir+"/granted", nil, 0o600)
				os.Link(w.dir+"/granted", p)
				return p, Options{BoxWritable: []string{w.dir + "/granted"}}
			}, "writable by the box"},
			{"the box may write everything", func(t *testing.T, w world) (string, Options) {
				return filepath.Join(w.dir, "r.json"), Options{BoxWritable: []string{"/"}}
			}, "writable by the box"},
			{"link in a box-writable directory", func(t *testing.T, w world) (string, Options) {
				os.Symlink(w.outside, filepath.Join(w.dir, "out"))
				return filepath.Join(w.dir, "out", "r.json"), Options{BoxWritable: []string{w.dir}}
			}, "writable by the box"},
			{"world-writable directory", func(t *testing.T, w world) (string, Options) {
				os.Chmod(w.dir, 0o777)
				return filepath.Join(w.dir, "r.json"), Options{}
			}, "may be written by others (mode 0777) (chmod go-w"},
			{"group-writable directory above", func(t *testing.T, w world) (string, Options) {
				os.Mkdir(filepath.Join(w.dir, "sub"), 0o700)
				os.Chmod(w.dir, 0o770)
				return filepath.Join(w.dir, "sub", "r.json"), Options{}
			}, "may be written by others"},
			{"directory of another user", func(t *testing.T, w world) (string, Options) {
				os.Chown(w.dir, 4321, 4321)
				return filepath.Join(w.dir, "r.json"), Options{}
			}, "belongs to user 4321"},
			{"link placed by another user", func(t *testing.T, w world) (string, Options) {
				l := filepath.Join(w.dir, "out")
				os.Symlink(w.outside, l)
				os.Lchown(l, 4321, 4321)
				return filepath.Join(l, "r.json"), Options{}
			}, "symbolic link others could have placed"},
			{"file where a directory should be", func(t *testing.T, w world) (string, Options) {
				os.WriteFile(filepath.Join(w.dir, "f"), nil, 0o600)
				return filepath.Join(w.dir, "f", "r.json"), Options{}
			}, "is not a directory"},
			{"missing directory", func(t *testing.T, w world) (string, Options) {
				return filepath.Join(w.dir, "none", "r.json"), Options{}
			}, "no such file"},
			{"link loop", func(t *testing.T, w world) (string, Options) {
				os.Symlink("b", filepath.Join(w.dir, "a"))
				os.Symlink("a", filepath.Join(w.dir, "b"))
				return filepath.Join(w.dir, "a", "r.json"), Options{}
			}, "symbolic links on the way"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				w := newWorld(t)
				path, o := tt.setup(t, w)
				err := WriteFile(path, []byte("x"), 0o600, o)
				wantRefused(t, err, tt.want)
				if !strings.Contains(err.Error(), path) {
					t.Errorf("got %v; want it to name %s", err, path)
				}
				if _, serr := os.Lstat(path); serr == nil && !strings.Contains(tt.name, "box path is the file") {
					t.Errorf("%s exists after a refusal", path)
				}
				f, aerr := OpenAppend(path, os.O_WRONLY, 0o600, o)
				if aerr == nil {
					f.Close()
				}
				wantRefused(t, aerr, tt.want)
				w.untouched(t)
			})
		}
	})
}

// TestStickyAndOwnDirectoriesPass: /tmp-like directories (sticky) and
// directories of root pass the StrictModes rule; a link root placed in a
// directory only root may change is followed.
func TestStickyAndOwnDirectoriesPass(t *testing.T) {
	requireRoot(t)
	bothWays(t, func(t *testing.T) {
		w := newWorld(t)
		os.Chmod(w.dir, os.ModeSticky|0o777)
		if err := WriteFile(filepath.Join(w.dir, "r.json"), []byte("x"), 0o600, Options{}); err != nil {
			t.Errorf("sticky directory: %v", err)
		}
		os.Chmod(w.dir, 0o755)
		if err := os.Symlink(w.outside, filepath.Join(w.dir, "out")); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(filepath.Join(w.dir, "out", "r.json"), []byte("x"), 0o600, Options{}); err != nil {
			t.Errorf("root's own link: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(w.outside, "r.json")); err != nil || string(b) != "x" {
			t.Errorf("through root's own link: got %q, %v", b, err)
		}
	})
}

// TestNonRootSkipsStrictModes: as another user the StrictModes rule does not
// apply to directories, but a link in a directory others may write is still
// never followed.
func TestNonRootSkipsStrictModes(t *testing.T) {
	nonStrict(t)
	bothWays(t, func(t *testing.T) {
		w := newWorld(t)
		os.Chmod(w.dir, 0o777)
		if err := WriteFile(filepath.Join(w.dir, "r.json"), []byte("x"), 0o600, Options{}); err != nil {
			t.Errorf("world-writable directory, not root: %v", err)
		}
		os.Symlink(w.outside, filepath.Join(w.dir, "out"))
		err := WriteFile(filepath.Join(w.dir, "out", "r.json"), []byte("x"), 0o600, Options{})
		wantRefused(t, err, "symbolic link others could have placed")
		w.untouched(t)
	})
}

func TestOpenAppend(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		tests := []struct {
			name  string
			plant func(w world, path string)
			want  string // "" = opens
		}{
			{"new file", func(world, string) {}, ""},
			{"existing file", func(_ world, path string) { os.WriteFile(path, []byte("old\n"), 0o600) }, ""},
			{"link to the victim", func(w world, path string) { os.Symlink(w.victim, path) }, "is a symbolic link"},
			{"dangling link", func(w world, path string) { os.Symlink(filepath.Join(w.outside, "new"), path) }, "is a symbolic link"},
			{"hard link to the victim", func(w world, path string) { os.Link(w.victim, path) }, "hard link"},
			{"fifo", func(_ world, path string) { unix.Mkfifo(path, 0o600) }, "not a regular file"},
			{"directory", func(_ world, path string) { os.Mkdir(path, 0o700) }, "open"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				w := newWorld(t)
				path := filepath.Join(w.dir, "trace.jsonl")
				tt.plant(w, path)
				done := make(chan struct{})
				var f *os.File
				var err error
				go func() { f, err = OpenAppend(path, os.O_RDWR, 0o600, Options{}); close(done) }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("OpenAppend hung")
				}
				if tt.want != "" {
					if f != nil {
						f.Close()
					}
					wantRefused(t, err, tt.want)
					if !errs.Is(err, errs.Invalid) && !errs.Is(err, errs.Unavailable) {
						t.Errorf("got class %v", errs.ClassOf(err))
					}
					w.untouched(t)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				before, _ := os.ReadFile(path)
				if _, err := f.Write([]byte("line\n")); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(path); string(b) != string(before)+"line\n" {
					t.Errorf("got %q, want %q appended", b, "line\n")
				}
				if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
					t.Errorf("mode: got %v, want 0600", st.Mode().Perm())
				}
				fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
				if fl&unix.O_NONBLOCK != 0 || fl&unix.O_APPEND == 0 {
					t.Errorf("flags %#x: want O_APPEND without O_NONBLOCK", fl)
				}
				w.untouched(t)
			})
		}
	})
}

func TestMakeDirs(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		w := newWorld(t)
		path := filepath.Join(w.dir, "a", "b", "audit.jsonl")
		f, err := OpenAppend(path, os.O_WRONLY, 0o600, Options{MakeDirs: true})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		for _, d := range []string{filepath.Join(w.dir, "a"), filepath.Join(w.dir, "a", "b")} {
			if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("%s: got %v, %v; want a directory 0700", d, st, err)
			}
		}
		if err := MkdirAll(filepath.Join(w.dir, "c", "d"), Options{MakeDirs: true}); err != nil {
			t.Fatal(err)
		}
		if err := MkdirAll(filepath.Join(w.dir, "e"), Options{}); err == nil {
			t.Error("MkdirAll without MakeDirs created a directory")
		}
		if err := MkdirAll(filepath.Join(w.dir, "c"), Options{BoxWritable: []string{w.dir}}); err == nil {
			t.Error("MkdirAll accepted a box-writable directory")
		}
	})
}

// race keeps swapping dir/sub (dir is one anyone may write, as a non-root
// airlock accepts) between a real directory and a link to the outside, and
// plants links to the victim at the names written, while write runs for up
// to d. It reports how many writes succeeded and failed.
func race(t *testing.T, w world, d time.Duration, write func(sub string) error) (wrote, failed int) {
	os.Chmod(w.dir, 0o777)
	sub := filepath.Join(w.dir, "sub")
	aside := filepath.Join(w.dir, "sub.real")
	link := filepath.Join(w.dir, "sub.link")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(w.outside, link); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.Rename(sub, aside)
			os.Rename(link, sub)
			os.Symlink(w.victim, filepath.Join(aside, "r.json.tmp"))
			os.Symlink(w.victim, filepath.Join(aside, "log"))
			os.Rename(sub, link)
			os.Rename(aside, sub)
			os.Remove(filepath.Join(sub, "log"))
			os.Remove(filepath.Join(sub, "r.json.tmp"))
		}
	}()
	deadline := time.Now().Add(d)
	for i := 0; i < 200000 && (time.Now().Before(deadline) || wrote == 0); i++ {
		if err := write(sub); err == nil {
			wrote++
		} else {
			failed++
		}
	}
	stop.Store(true)
	wg.Wait()
	return wrote, failed
}

// TestSwappedComponentRace: the old shape (os.WriteFile of a .tmp name, an
// O_APPEND|O_CREATE open) writes outside while a component is being swapped
// for a link; privfile's writes land in the real directory or are refused.
func TestSwappedComponentRace(t *testing.T) {
	nonStrict(t)
	t.Run("old shape", func(t *testing.T) {
		w := newWorld(t)
		race(t, w, 2*time.Second, func(sub string) error {
			p := filepath.Join(sub, "r.json")
			if err := os.WriteFile(p+".tmp", []byte("report\n"), 0o600); err != nil {
				return err
			}
			return os.Rename(p+".tmp", p)
		})
		b, _ := os.ReadFile(w.victim)
		ents, _ := os.ReadDir(w.outside)
		if string(b) == victimText && len(ents) == 1 {
			t.Fatal("the old shape never wrote outside under the race: the test shows nothing")
		}
	})
	bothWays(t, func(t *testing.T) {
		w := newWorld(t)
		wrote, failed := race(t, w, time.Second, func(sub string) error {
			if f, err := OpenAppend(filepath.Join(sub, "log"), os.O_WRONLY, 0o600, Options{}); err == nil {
				f.Write([]byte("x\n"))
				f.Close()
			}
			return WriteFile(filepath.Join(sub, "r.json"), []byte("report\n"), 0o600, Options{})
		})
		t.Logf("wrote %d, refused %d", wrote, failed)
		if wrote == 0 {
			t.Error("no write ever landed in the real directory")
		}
		w.untouched(t)
	})
}

// TestReadFileAtRefusesWhatReadFileRefuses: a file read in a directory
// OpenDir returned passes the same checks as one read by its path, and
// only a name of one component is read.
func TestReadFileAtRefusesWhatReadFileRefuses(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		tests := []struct {
			name string
			// setup makes r in w.dir and returns the options.
			setup func(t *testing.T, w world, r string) Options
			want  string // "" reads "kept\n"
		}{
			{"own file", func(t *testing.T, w world, r string) Options { return Options{} }, ""},
			{"link to another file", func(t *testing.T, w world, r string) Options {
				os.Remove(r)
				os.Symlink(w.victim, r)
				return Options{}
			}, "symbolic link"},
			{"others may write it", func(t *testing.T, w world, r string) Options {
				os.Chmod(r, 0o666)
				return Options{}
			}, "may be written by others"},
			{"two names", func(t *testing.T, w world, r string) Options {
				os.Link(r, filepath.Join(w.dir, "other"))
				return Options{}
			}, "has 2 names"},
			{"box path is the file", func(t *testing.T, w world, r string) Options {
				return Options{BoxWritable: []string{r}}
			}, "writable by the box"},
			{"box path is the file, given twice", func(t *testing.T, w world, r string) Options {
				return Options{BoxWritable: []string{r, r + "/", w.outside}}
			}, "writable by the box"},
			{"box path is the file by another name", func(t *testing.T, w world, r string) Options {
				granted := filepath.Join(w.outside, "granted")
				os.Link(r, granted)
				return Options{BoxWritable: []string{granted}}
			}, "writable by the box"},
			{"a directory", func(t *testing.T, w world, r string) Options {
				os.Remove(r)
				os.Mkdir(r, 0o700)
				return Options{}
			}, "not a regular file"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				w := newWorld(t)
				r := filepath.Join(w.dir, "r.rec")
				if err := os.WriteFile(r, []byte("kept\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				o := tt.setup(t, w, r)
				d, err := OpenDir(w.dir, o)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				byPath, perr := ReadFile(r, 1<<10, o)
				at, aerr := ReadFileAt(d, "r.rec", 1<<10, o)
				if tt.want == "" {
					if perr != nil || aerr != nil || string(byPath) != "kept\n" || string(at) != "kept\n" {
						t.Fatalf("ReadFile = %q, %v; ReadFileAt = %q, %v; want both %q", byPath, perr, at, aerr, "kept\n")
					}
					return
				}
				wantRefused(t, perr, tt.want)
				wantRefused(t, aerr, tt.want)
			})
		}
	})
}

func TestReadFileAtReadsOneName(t *testing.T) {
	w := newWorld(t)
	if err := os.Mkdir(filepath.Join(w.dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "sub", "r"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(w.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"sub/r", "..", ".", ""} {
		if _, err := ReadFileAt(d, name, 1<<10, Options{}); err == nil || !strings.Contains(err.Error(), "is not a name in") {
			t.Errorf("ReadFileAt(%q) = %v; want it refused as not a name", name, err)
		}
	}
}
