package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/sandbox"
)

// hostConf is a file a host tool executes or loads after a run, and how
// to show that the tool really runs what the file names: host plants
// nothing itself, it runs the tool in dir (where the test has written the
// file) and reports whether the marker program ran ("" when the tool is
// not installed; the box's refusal is checked either way).
type hostConf struct {
	name    string
	rel     string                                        // the file, relative to the writable directory
	content func(marker string) string                    // what the attacker writes
	host    func(t *testing.T, dir string) (bool, string) // ran, or why not tried
}

// markerScript writes an executable at dir/evil.sh that touches marker.
func markerScript(t *testing.T, dir, marker string) string {
	t.Helper()
	p := filepath.Join(dir, "evil.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\ntouch "+marker+"\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func hostConfs() []hostConf {
	return []hostConf{
		{"cargo rustc-wrapper", ".cargo/config.toml",
			func(m string) string { return "[build]\nrustc-wrapper = \"" + m + "\"\n" },
			func(t *testing.T, dir string) (bool, string) {
				cargo, err := exec.LookPath("cargo")
				if err != nil {
					if c := filepath.Join(os.Getenv("HOME"), ".cargo/bin/cargo"); fileExists(c) {
						cargo = c
					} else {
						return false, "cargo not installed"
					}
				}
				os.WriteFile(filepath.Join(dir, "Cargo.toml"), []byte("[package]\nname = \"x\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"), 0o644)
				os.MkdirAll(filepath.Join(dir, "src"), 0o755)
				os.WriteFile(filepath.Join(dir, "src/main.rs"), []byte("fn main() {}\n"), 0o644)
				cmd := exec.Command(cargo, "build", "--offline", "-q")
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "CARGO_TARGET_DIR="+filepath.Join(dir, "target"))
				cmd.Run()
				return true, ""
			}},
		{"go toolexec in the go env file", ".config/go/env",
			func(m string) string { return "GOFLAGS=-toolexec=" + m + "\n" },
			func(t *testing.T, dir string) (bool, string) {
				goBin, err := exec.LookPath("go")
				if err != nil {
					return false, "go not installed"
				}
				os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.21\n"), 0o644)
				os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
				cmd := exec.Command(goBin, "build", "-o", os.DevNull, ".")
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME=", "GOFLAGS=", "GOCACHE="+filepath.Join(dir, "gocache"), "GOTOOLCHAIN=local")
				cmd.Run()
				return true, ""
			}},
		{"bash aliases sourced by Debian's .bashrc", ".bash_aliases",
			func(m string) string { return m + "\n" },
			func(t *testing.T, dir string) (bool, string) {
				if !fileExists("/etc/skel/.bashrc") {
					return false, "no /etc/skel/.bashrc"
				}
				skel, _ := os.ReadFile("/etc/skel/.bashrc")
				if !strings.Contains(string(skel), ".bash_aliases") {
					return false, "this system's .bashrc does not source .bash_aliases"
				}
				cmd := exec.Command("bash", "--rcfile", "/etc/skel/.bashrc", "-i", "-c", "true")
				cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "PS1=x"}
				cmd.Run()
				return true, ""
			}},
		{"kubectl exec credential plugin", ".kube/config",
			func(m string) string {
				return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n" +
					"users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: " + m + "\n      interactiveMode: Never\n" +
					"contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
			},
			func(t *testing.T, dir string) (bool, string) {
				kubectl, err := exec.LookPath("kubectl")
				if err != nil {
					return false, "kubectl not installed"
				}
				cmd := exec.Command(kubectl, "get", "pods", "--request-timeout=2s")
				cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
				cmd.Run()
				return true, ""
			}},
		{"a program in ~/.local/bin, first on the login PATH", ".local/bin/git",
			func(m string) string { return "#!/bin/sh\nexec " + m + "\n" },
			func(t *testing.T, dir string) (bool, string) {
				skel, err := os.ReadFile("/etc/skel/.profile")
				if err != nil || !strings.Contains(string(skel), ".local/bin") {
					return false, "this system's .profile does not put ~/.local/bin on the PATH"
				}
				os.WriteFile(filepath.Join(dir, ".profile"), skel, 0o644)
				os.Chmod(filepath.Join(dir, ".local/bin/git"), 0o755)
				cmd := exec.Command("bash", "-l", "-c", "git --version")
				cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
				cmd.Run()
				return true, ""
			}},
		{"aws credential_process", ".aws/config", func(m string) string { return "[default]\ncredential_process = " + m + "\n" }, nil},
		{"docker credential helper", ".docker/config.json", func(string) string { return "{\"credsStore\": \"evil\"}\n" }, nil},
		{"gradle init script", ".gradle/init.d/x.gradle", func(m string) string { return "\"" + m + "\".execute()\n" }, nil},
		{"starship custom command", ".config/starship.toml", func(m string) string { return "[custom.x]\ncommand = \"" + m + "\"\nwhen = true\n" }, nil},
		{"terraform provider overrides", ".terraformrc", func(m string) string {
			return "provider_installation {\n  dev_overrides {\n    \"x/y\" = \"" + m + "\"\n  }\n}\n"
		}, nil},
		{"readline key bindings", ".inputrc", func(m string) string { return "\"\\C-m\": \"" + m + "\\n\"\n" }, nil},
		{"husky hook script", ".husky/pre-commit", func(m string) string { return m + "\n" }, nil},
		{"lefthook config", "lefthook.yml", func(m string) string { return "pre-commit:\n  commands:\n    x:\n      run: " + m + "\n" }, nil},
		{"mise config (its default name)", "mise.toml", func(m string) string { return "[hooks]\nenter = \"" + m + "\"\n" }, nil},
		{"pnpm hook file", ".pnpmfile.cjs", func(m string) string { return "require('child_process').execSync('" + m + "')\n" }, nil},
		{"ssh client config", ".ssh/config", func(m string) string { return "Host *\n  ProxyCommand " + m + "\n" }, nil},
		{"ssh authorized keys", ".ssh/authorized_keys", func(string) string { return "ssh-ed25519 AAAA attacker\n" }, nil},
		{"git global config", ".gitconfig",
			func(m string) string { return "[core]\n\tfsmonitor = " + m + "\n" },
			func(t *testing.T, dir string) (bool, string) {
				if _, err := exec.LookPath("git"); err != nil {
					return false, "git not installed"
				}
				repo := filepath.Join(dir, "work")
				exec.Command("git", "init", "-q", repo).Run()
				cmd := exec.Command("git", "status", "--porcelain")
				cmd.Dir = repo
				cmd.Env = []string{"HOME=" + dir, "XDG_CONFIG_HOME=", "PATH=/usr/bin:/bin"}
				cmd.Run()
				return true, ""
			}},
		{"git XDG config", ".config/git/config", func(m string) string { return "[core]\n\tfsmonitor = " + m + "\n" }, nil},
		{"vim start-up file", ".vimrc", func(m string) string { return ":silent !" + m + "\n" }, nil},
		{"neovim start-up file", ".config/nvim/init.lua", func(m string) string { return "os.execute('" + m + "')\n" }, nil},
		{"systemd user unit", ".config/systemd/user/x.service", func(m string) string { return "[Service]\nExecStart=" + m + "\n" }, nil},
		{"desktop autostart", ".config/autostart/x.desktop", func(m string) string { return "[Desktop Entry]\nExec=" + m + "\n" }, nil},
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestHostToolConfigs: each file here is run or loaded by a common tool
// on the host after the run (shown with the real tool where it is
// installed); the box must not be able to create it in a writable
// directory.
func TestHostToolConfigs(t *testing.T) {
	requireTier1(t)
	for _, c := range hostConfs() {
		t.Run(c.name, func(t *testing.T) {
			if c.host != nil {
				dir := t.TempDir()
				marker := filepath.Join(t.TempDir(), "ran")
				evil := markerScript(t, dir, marker)
				p := filepath.Join(dir, c.rel)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(c.content(evil)), 0o644); err != nil {
					t.Fatal(err)
				}
				if tried, why := c.host(t, dir); !tried {
					t.Logf("host tool not shown: %s", why)
				} else if !fileExists(marker) {
					t.Errorf("the host tool did not run what %s names; the case shows nothing", c.rel)
				}
			}
			repo := gitRepo(t)
			script := "mkdir -p \"$(dirname " + c.rel + ")\" 2>/dev/null; printf x > " + c.rel + " 2>/dev/null && echo wrote; true"
			o := runIn(t, sandbox.Tier1, fixSpec(t, repo), "", "sh", "-c", script)
			if o.err != nil {
				t.Fatalf("run: %v %s", o.err, o.stderr)
			}
			if strings.Contains(o.stdout, "wrote") {
				t.Errorf("the box wrote %s, which the host runs after the run", c.rel)
			}
			if _, err := os.Lstat(filepath.Join(repo, c.rel)); err == nil {
				b, _ := os.ReadFile(filepath.Join(repo, c.rel))
				if string(b) == "x" {
					t.Errorf("%s is left in the tree with the box's content", c.rel)
				}
			}
		})
	}
}

// TestRenameAroundHeldPaths: a held path is a mount in the box, but its
// parent directory is not: renaming the parent away and making a new one
// must not leave the box's version of the held file on the host.
func TestRenameAroundHeldPaths(t *testing.T) {
	requireTier1(t)
	for _, c := range []struct{ name, setup, script, rel string }{
		{"a nested repository's top", "pkg", "mv pkg pkg.old && mkdir -p pkg/.vscode && printf x > pkg/.vscode/tasks.json", "pkg/.vscode/tasks.json"},
		{"the parent of a nested entry", "", "mv .cargo .cargo.old; mkdir -p .cargo && printf x > .cargo/config.toml", ".cargo/config.toml"},
		{"the parent of a fish entry", "", "mv .config .config.old; mkdir -p .config/fish && printf x > .config/fish/config.fish", ".config/fish/config.fish"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := gitRepo(t)
			if c.setup != "" {
				os.MkdirAll(filepath.Join(repo, c.setup), 0o755)
				exec.Command("git", "init", "-q", filepath.Join(repo, c.setup)).Run()
			}
			o := runIn(t, sandbox.Tier1, fixSpec(t, repo), "", "sh", "-c", c.script+"; echo rc=$?")
			if o.err != nil {
				t.Fatalf("run: %v %s", o.err, o.stderr)
			}
			t.Logf("box: %s %s", o.stdout, o.stderr)
			if b, err := os.ReadFile(filepath.Join(repo, c.rel)); err == nil && string(b) == "x" {
				t.Errorf("%s holds the box's content on the host", c.rel)
			}
		})
	}
}
