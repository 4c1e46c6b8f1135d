package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeRunsNoBinaryFromPath: `airlock node` runs only the airlock-node
// beside the airlock binary, never one found on PATH. A PATH entry may be
// relative (".", "", "bin": the working directory, often a workspace a box
// wrote) or lie in any directory some box was granted, which the host
// cannot tell from the PATH alone; so a binary a box wrote there must never
// be what the host executes.
func TestNodeRunsNoBinaryFromPath(t *testing.T) {
	install := t.TempDir() // airlock's own directory: no airlock-node in it
	work := t.TempDir()    // a workspace a box could write
	planted := filepath.Join(work, "airlock-node")
	if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{planted, filepath.Join(work, "bin", "airlock-node")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, path string }{
		{"empty entry", "/usr/bin::/bin"},
		{"dot", ".:/usr/bin"},
		{"relative", "bin:/usr/bin"},
		{"absolute workspace", work + ":/usr/bin"},
		{"trailing colon", "/usr/bin:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			var stderr bytes.Buffer
			env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr, Dir: work,
				Exe: filepath.Join(install, "airlock"), Environ: []string{"HOME=" + t.TempDir(), "PATH=" + tc.path},
				Exec: func(path string, argv, envv []string) error { ran = append(ran, path); return os.ErrPermission }}
			code := Main(context.Background(), []string{"node", "--pool", "ci"}, env)
			if len(ran) != 0 {
				t.Fatalf("PATH=%s: airlock executed %v, a file of the working directory", tc.path, ran)
			}
			if code != 125 || !strings.Contains(stderr.String(), filepath.Join(install, "airlock-node")) {
				t.Errorf("PATH=%s: exit %d, %q; want 125 naming the airlock-node beside airlock", tc.path, code, stderr.String())
			}
		})
	}
}

// TestNodeRefusesBesideOthersMayWrite: the airlock-node beside airlock is
// run only while no one but its owner may change it or its directory.
func TestNodeRefusesBesideOthersMayWrite(t *testing.T) {
	for _, tc := range []struct {
		name      string
		file, dir os.FileMode
		wantRun   bool
	}{
		{"owner only", 0o755, 0o755, true},
		{"group may write the file", 0o775, 0o755, false},
		{"others may write the directory", 0o755, 0o777, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			install := t.TempDir()
			p := filepath.Join(install, "airlock-node")
			if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.file); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(install, tc.dir); err != nil {
				t.Fatal(err)
			}
			var ran []string
			env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Dir: t.TempDir(),
				Exe: filepath.Join(install, "airlock"), Environ: []string{"HOME=" + t.TempDir(), "PATH=/usr/bin"},
				Exec: func(path string, argv, envv []string) error { ran = append(ran, path); return os.ErrPermission }}
			Main(context.Background(), []string{"node"}, env)
			if got := len(ran) == 1 && ran[0] == p; got != tc.wantRun {
				t.Errorf("ran %v; want run=%v", ran, tc.wantRun)
			}
		})
	}
}

// TestNodeRefusesLinkIntoDirOthersMayWrite: an airlock-node beside airlock
// that is a link into a directory others may write is not run.
func TestNodeRefusesLinkIntoDirOthersMayWrite(t *testing.T) {
	install, shared := t.TempDir(), t.TempDir()
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(shared, "airlock-node")
	if err := os.WriteFile(target, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(install, "airlock-node")); err != nil {
		t.Fatal(err)
	}
	var ran []string
	env := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Dir: t.TempDir(),
		Exe: filepath.Join(install, "airlock"), Environ: []string{"HOME=" + t.TempDir(), "PATH=/usr/bin"},
		Exec: func(path string, argv, envv []string) error { ran = append(ran, path); return os.ErrPermission }}
	if code := Main(context.Background(), []string{"node"}, env); code != 125 || len(ran) != 0 {
		t.Errorf("exit %d, ran %v; want 125 and nothing run", code, ran)
	}
}
