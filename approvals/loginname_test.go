package approvals

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// loginNameHelper, set in a child's environment, makes the test binary
// print loginName and exit (TestMain).
const loginNameHelper = "AIRLOCK_APPROVALS_LOGIN_NAME"

func TestMain(m *testing.M) {
	if os.Getenv(loginNameHelper) == "1" {
		fmt.Print(loginName())
		os.Exit(0)
	}
	if role := os.Getenv(pidRoleEnv); role != "" {
		os.Exit(pidRole(role))
	}
	os.Exit(m.Run())
}

// TestLoginNameNotFromEnvironment: the name an answer is recorded under
// is the user database's for the uid, never $USER, which whoever starts
// airlock sets (a build without cgo gives user.Current's name from it for
// a uid the database lacks).
func TestLoginNameNotFromEnvironment(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("running as another uid needs root")
		}
		t.Skip("running as another uid needs root")
	}
	const uid = 4242 // in no user database here
	// The test binary, where uid 4242 may run it (go test's own directory
	// is its owner's alone).
	dir, err := os.MkdirTemp("", "airlock-login-name")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "approvals.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{loginNameHelper + "=1", "USER=ceo", "HOME=/"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as uid %d: %v: %s", uid, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != fmt.Sprintf("uid%d", uid) {
		t.Fatalf("loginName as uid %d with USER=ceo: %q, want \"uid%d\"", uid, got, uid)
	}
}

func TestPasswdName(t *testing.T) {
	file := filepath.Join(t.TempDir(), "passwd")
	text := "root:x:0:0:root:/root:/bin/sh\n+:::::::\n-bad:x:7:7::/:/bin/sh\n:x:8:8::/:/bin/sh\nana:x:1000:1000::/home/ana:/bin/sh\nshort:x\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, uid, want string }{
		{"root", "0", "root"},
		{"a user", "1000", "ana"},
		{"no entry", "4242", ""},
		{"a NIS exclusion is no name", "7", ""},
		{"an empty name is none", "8", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := passwdName(file, tc.uid); got != tc.want {
				t.Errorf("passwdName(%q) = %q, want %q", tc.uid, got, tc.want)
			}
		})
	}
	if got := passwdName(filepath.Join(t.TempDir(), "none"), "0"); got != "" {
		t.Errorf("a missing file: %q, want \"\"", got)
	}
}
