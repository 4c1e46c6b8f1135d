package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestHandOverRefusesWhatABoxWrote: a box let write a project in fix mode
// plants bin/airlock-mcp there; the person later builds (only) airlock into
// that bin/ and runs `airlock files ls`, `airlock read-result` or `airlock
// mcp serve`. The hand-over must not execute the planted program on the
// host: the project is on airlock's record of box-writable paths, which the
// box's own planner (which sees only the box it plans) cannot weigh.
func TestHandOverRefusesWhatABoxWrote(t *testing.T) {
	root := t.TempDir()
	proj, marker := filepath.Join(root, "proj"), filepath.Join(root, "ran-on-host")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	environ := []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"), "XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "XDG_RUNTIME_DIR=" + root}
	// The box's command: plant a program named airlock-mcp in the project.
	plant := "mkdir -p bin && printf '#!/bin/sh\\necho ran > " + marker + "\\n' > bin/airlock-mcp && chmod 755 bin/airlock-mcp"
	cmd := exec.Command(testsupport.AirlockBin(t), "run", "--mode", "fix", "--workdir", proj, "--", "/bin/sh", "-c", plant)
	cmd.Env, cmd.Dir = environ, proj
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("airlock run --mode fix (the box plants bin/airlock-mcp): %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(proj, "bin", "airlock-mcp")); err != nil {
		t.Fatalf("the box planted nothing: %v", err)
	}
	// The person's own build of airlock, beside what the box planted.
	airlock := filepath.Join(proj, "bin", "airlock")
	copyExe(t, testsupport.AirlockBin(t), airlock)
	for _, args := range [][]string{{"files", "ls"}, {"read-result", "airlock-file:sha256:" + strings.Repeat("1", 64)}, {"mcp", "serve", "--sandbox", "off"}} {
		code, out := runExe(t, airlock, environ, "", args...)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("airlock %v executed the airlock-mcp a box planted, on the host (exit %d, %q)", args, code, out)
		}
		if code != 125 || !strings.Contains(out, "which a box was let write") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("airlock %v: exit %d, %q; want 125 and one line naming the box-writable place", args, code, out)
		}
	}
}

// TestHandOverNotToItself: an airlock-mcp beside airlock that is the airlock
// binary again (a link to it, or a copy by that name) is refused with the
// fix, where handing over would run the same binary again and again,
// never answering.
func TestHandOverNotToItself(t *testing.T) {
	bin := t.TempDir()
	airlock := filepath.Join(bin, "airlock")
	copyExe(t, testsupport.AirlockBin(t), airlock)
	environ := []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	for _, tc := range []struct {
		name  string
		plant func(to string)
		want  string
	}{
		{"copy", func(to string) { copyExe(t, airlock, to) }, "is the running binary itself"},
		// A link is refused as any link beside airlock is.
		{"symlink", func(to string) {
			if err := os.Symlink("airlock", to); err != nil {
				t.Fatal(err)
			}
		}, "is a link"},
		// A hard link is refused as any file beside airlock with a
		// second name is.
		{"hard link", func(to string) {
			if err := os.Link(airlock, to); err != nil {
				t.Fatal(err)
			}
		}, "names (hard links)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mcp := filepath.Join(bin, "airlock-mcp")
			os.Remove(mcp)
			tc.plant(mcp)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, airlock, "files", "ls")
			cmd.Env = environ
			out, _ := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("airlock files ls with airlock-mcp a %s of airlock: still running after 20s (handing over to itself)", tc.name)
			}
			if code := cmd.ProcessState.ExitCode(); code != 125 || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %d, %q; want 125 and %q", code, out, tc.want)
			}
		})
	}
}

// TestHandOverRefusesLink: an airlock-mcp beside airlock that is a link to
// a file elsewhere is not run. Handed to, it would be "the airlock binary"
// of the boxes it starts, whose planner keeps them off the directory of the
// link's target alone: a box of `airlock mcp serve --mode fix` granted the
// airlock binary's directory could replace airlock itself, which `airlock
// run` with the same policy refuses.
func TestHandOverRefusesLink(t *testing.T) {
	install, elsewhere := t.TempDir(), t.TempDir()
	airlock := filepath.Join(install, "airlock")
	copyExe(t, testsupport.AirlockBin(t), airlock)
	marker := filepath.Join(t.TempDir(), "ran")
	target := filepath.Join(elsewhere, "airlock-mcp")
	if err := os.WriteFile(target, []byte("#!/bin/sh\necho ran > "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(install, "airlock-mcp")); err != nil {
		t.Fatal(err)
	}
	code, out := runExe(t, airlock, []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}, "", "mcp", "serve")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("airlock mcp serve ran the airlock-mcp a link beside airlock leads to (exit %d, %q)", code, out)
	}
	if code != 125 || !strings.Contains(out, "is a link") {
		t.Errorf("exit %d, %q; want 125 naming the link", code, out)
	}
}

// TestHandOverRefusesSecondNameOrOpenParent: a program beside airlock
// with a second name (a hard link a box may reach elsewhere rewrites it)
// or under a directory others may write (higher up than its own) is not
// run, as airlock-box is not bound in those cases.
func TestHandOverRefusesSecondNameOrOpenParent(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		place      func(t *testing.T, install, script string)
	}{
		{"a second name elsewhere", "names (hard links)", func(t *testing.T, install, script string) {
			if err := os.Link(script, filepath.Join(t.TempDir(), "other-name")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory above others may write", "may be written by others", func(t *testing.T, install, script string) {
			if err := os.Chmod(filepath.Dir(install), 0o777); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			install := filepath.Join(t.TempDir(), "inst")
			if err := os.Mkdir(install, 0o755); err != nil {
				t.Fatal(err)
			}
			airlock := filepath.Join(install, "airlock")
			copyExe(t, testsupport.AirlockBin(t), airlock)
			marker := filepath.Join(t.TempDir(), "ran")
			script := filepath.Join(install, "airlock-mcp")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran > "+marker+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.place(t, install, script)
			code, out := runExe(t, airlock, []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}, "", "mcp", "serve")
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("airlock mcp serve ran the airlock-mcp with %s (exit %d, %q)", tc.name, code, out)
			}
			if code != 125 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, %q; want 125 naming %q", code, out, tc.want)
			}
		})
	}
}
