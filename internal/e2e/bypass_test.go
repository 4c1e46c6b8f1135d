package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bypassAttack is one way past a command policy, tried end to end: the
// argv first runs unconfined on the host (proving the attack does what it
// claims), then through `airlock run` under a policy that must hold it.
type bypassAttack struct {
	name   string   // short: the test's temporary directories hold a Unix socket
	policy string   // the policy of the held run
	mode   string   // observe or fix
	argv   []string // run in the working directory
	setup  func(t *testing.T, h *home)
	// hit reports whether the attack took effect.
	hit func(h *home) bool
	// wantErr is the structured code airlock must answer with, or what
	// the box says when the box holds the attack.
	wantErr string
	// box: the policy lets the command run and the box holds the attack
	// (the command fails inside), so only its effect is checked.
	box bool
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func marker(h *home) bool { return exists(filepath.Join(h.Work, "MARK")) }

// TestBypassEndToEnd runs attacks that once got past the policy through the
// real binary and the real box. Each must first succeed unconfined, and the
// held run is in fix mode with the working directory writable, so it is the
// policy that holds the attack, not the box's read-only mounts.
func TestBypassEndToEnd(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	const timeout = "escalation: {timeout: 1s}\n"
	attacks := []bypassAttack{
		{
			name:   "sed-e", // sed e runs a program that is not allowed (argv path)
			policy: "shell: {allow: [sed]}\nfs: {write: [.]}\n" + timeout,
			mode:   "fix",
			argv:   []string{"sed", "-n", "1e touch MARK", "f"},
			setup: func(t *testing.T, h *home) {
				h.write("f", "line\n")
			},
			hit: marker, wantErr: "POLICY_DENIED",
		},
		{
			name:    "awk-system", // awk system() runs a program that is not allowed
			policy:  "shell: {allow: [awk]}\nfs: {write: [.]}\n" + timeout,
			mode:    "fix",
			argv:    []string{"awk", `BEGIN{system("touch MARK")}`},
			hit:     marker,
			wantErr: "ESCALATION_TIMEOUT",
		},
		{
			name:    "carriage-return", // carriage return hides a substitution from the reader
			policy:  "shell: {allow: [sh, git]}\nfs: {write: [.]}\n" + timeout,
			mode:    "fix",
			argv:    []string{"sh", "-c", "git status \r# $(touch MARK)"},
			hit:     marker,
			wantErr: "ESCALATION_TIMEOUT",
		},
		{
			name:    "tee-policy", // tee overwrites the policy of the next run
			policy:  "shell: {allow: [tee]}\nfs: {write: [.]}\n" + timeout,
			mode:    "fix",
			argv:    []string{"tee", "airlock.yaml"},
			hit:     func(h *home) bool { return exists(filepath.Join(h.Work, "airlock.yaml")) },
			wantErr: "POLICY_DENIED",
		},
		{
			name:   "find-fprint", // find -fprint writes the policy of the next run (argv path)
			policy: "shell: {allow: [find]}\nfs: {write: [.]}\n" + timeout,
			mode:   "fix",
			argv:   []string{"find", ".", "-maxdepth", "0", "-fprint", "airlock.yaml"},
			hit:    func(h *home) bool { return exists(filepath.Join(h.Work, "airlock.yaml")) },
			// the policy file is never writable
			wantErr: "POLICY_DENIED",
		},
		{
			name:   "cp-hook", // cp plants a repository hook
			policy: "shell: {allow: [cp]}\nfs: {write: [.]}\n" + timeout,
			mode:   "fix",
			argv:   []string{"cp", "evil", ".git/hooks/pre-commit"},
			setup: func(t *testing.T, h *home) {
				h.write("evil", "#!/bin/sh\ntouch MARK\n")
				h.write(".git/hooks/README", "")
			},
			hit:     func(h *home) bool { return exists(filepath.Join(h.Work, ".git/hooks/pre-commit")) },
			wantErr: "ESCALATION_TIMEOUT",
		},
		{
			name:   "rm-link-slash", // rm -rf through a link with a trailing slash removes what it points at
			policy: "fs: {write: [.]}\n" + timeout,
			mode:   "fix",
			argv:   []string{"rm", "-rf", "link/"},
			setup: func(t *testing.T, h *home) {
				victim := filepath.Join(h.State, "victim")
				if err := os.MkdirAll(victim, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(victim, "precious"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(victim, filepath.Join(h.Work, "link")); err != nil {
					t.Fatal(err)
				}
			},
			hit:     func(h *home) bool { return !exists(filepath.Join(h.State, "victim", "precious")) },
			wantErr: "ESCALATION_TIMEOUT",
		},
		{
			// setsid leaves a process behind where spawning is refused; a
			// tier-1 box ends it with the box, so the refusal is a tier-0
			// one (isolation: none), where nothing would end it.
			name:    "setsid-spawn",
			policy:  "isolation: none\nfs: {write: [.]}\n" + timeout,
			mode:    "fix",
			argv:    []string{"setsid", "touch", "MARK"},
			hit:     marker,
			wantErr: "POLICY_DENIED",
		},
		{
			name:   "raw-script", // a shell reads a script file where shell strings are refused
			policy: "shell: {raw: false}\nfs: {write: [.]}\n" + timeout,
			mode:   "fix",
			argv:   []string{"sh", "script.sh"},
			setup: func(t *testing.T, h *home) {
				h.write("script.sh", "touch MARK\n")
			},
			hit: marker, wantErr: "POLICY_DENIED",
		},
		{
			name:   "git-grep-pager", // git grep -O runs a "pager" that is any command
			policy: "shell: {allow: [git]}\nfs: {write: [.]}\n" + timeout,
			mode:   "fix",
			argv:   []string{"git", "grep", "-Otouch MARK", "needle"},
			setup: func(t *testing.T, h *home) {
				h.write("a.txt", "needle\n")
				runHost(t, h.Work, []string{"git", "init", "-q", "."})
				runHost(t, h.Work, []string{"git", "add", "a.txt"})
			},
			hit: marker, wantErr: "POLICY_DENIED",
		},
		{
			name:    "make-eval", // make --eval runs makefile text from the command line
			policy:  "shell: {allow: [make]}\nfs: {write: [.]}\n" + timeout,
			mode:    "fix",
			argv:    []string{"make", "--eval=x:;@touch MARK", "x"},
			hit:     marker,
			wantErr: "ESCALATION_TIMEOUT",
		},
		{
			// A directory that holds HEAD, objects, refs and config is a
			// bare repository to git, whose core.fsmonitor runs on
			// `git -C DIR status`. The files may arrive by means the
			// policy does not see (an archive, a checkout, cp -r).
			name:   "git-bare-repo",
			policy: "shell: {allow: [git]}\nfs: {write: [.]}\n" + timeout,
			mode:   "fix",
			argv:   []string{"git", "-C", "r", "status"},
			setup: func(t *testing.T, h *home) {
				h.write("r/HEAD", "ref: refs/heads/main\n")
				h.write("r/objects/.keep", "")
				h.write("r/refs/.keep", "")
				h.write("r/config", "[core]\n\trepositoryformatversion = 0\n\tworktree = "+h.Work+"\n\tfsmonitor = touch MARK; false\n")
			},
			// the box's git reads only bare repositories named outright
			hit: marker, wantErr: "safe.bareRepository", box: true,
		},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			// Unconfined on the host: the attack works.
			open := newHome(t)
			if a.setup != nil {
				a.setup(t, open)
			}
			runHost(t, open.Work, a.argv)
			if !a.hit(open) {
				t.Fatalf("the attack did nothing unconfined, so holding it proves nothing: %q", a.argv)
			}

			// Through airlock: refused before anything ran.
			h := newHome(t)
			if a.setup != nil {
				a.setup(t, h)
			}
			pol := filepath.Join(h.State, "policy.yaml")
			if err := os.WriteFile(pol, []byte(a.policy), 0o644); err != nil {
				t.Fatal(err)
			}
			mode := a.mode
			if mode == "" {
				mode = "observe"
			}
			r := h.run(append([]string{"run", "--policy", pol, "--mode", mode, "--"}, a.argv...)...)
			if r.Code != 126 && !a.box {
				t.Errorf("got exit %d, want 126 (refused)\nstderr: %s", r.Code, r.Stderr)
			}
			if !strings.Contains(r.Stderr, a.wantErr) {
				t.Errorf("stderr %q does not name %s", r.Stderr, a.wantErr)
			}
			if a.hit(h) {
				t.Errorf("the attack took effect through airlock: %q", a.argv)
			}
		})
	}
}

// runHost runs argv unconfined in dir with empty input, ignoring how it
// ends (the attack's effect is what counts).
func runHost(t *testing.T, dir string, argv []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	// setsid may return before its program has run.
	for i := 0; i < 50 && ctx.Err() == nil; i++ {
		if argv[0] != "setsid" || exists(filepath.Join(dir, "MARK")) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}
