package warmhand

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// strangerUID is the uid the client of TestStrangerServerWarns runs as.
const strangerUID = 65534

// strangerDirEnv names the socket directory the test's client, run as
// strangerUID, hands over to.
const strangerDirEnv = "AIRLOCK_TEST_STRANGER_DIR"

// TestStrangerServerWarns: a server of another user in the client's own
// socket directory is refused with a warning on every run, for a client
// without CAP_SYS_PTRACE too. Such a client cannot read a stranger's /proc
// entries (EACCES), as a Landlock domain keeps it from its own server's;
// the stranger must not pass for the client's own server, confined apart,
// whose cold run says nothing.
func TestStrangerServerWarns(t *testing.T) {
	if dir := os.Getenv(strangerDirEnv); dir != "" {
		strangerClient(dir)
		return
	}
	testsupport.Require(t, testsupport.Root, testsupport.Proc)
	top, err := os.MkdirTemp("", "warmhand-stranger-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	// The test binary, copied where the client's uid may run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(top, "warmhand.test")
	testsupport.CopyBin(t, self, exe, 0o755)
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "airlock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, strangerUID, strangerUID); err != nil {
		t.Fatal(err)
	}
	// Root's server, listening in the client's own directory.
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: SocketPath(dir), Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(SocketPath(dir), 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestStrangerServerWarns$")
	cmd.Env = append(os.Environ(), strangerDirEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: strangerUID, Gid: strangerUID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the client: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.Contains(got, "outcome=0\n") {
		t.Fatalf("the client did not go cold:\n%s", got)
	}
	if !strings.Contains(got, "warn=warm: the server at "+SocketPath(dir)+" is refused (it runs as uid 0)") {
		t.Errorf("a stranger's server was refused without its warning:\n%s", got)
	}
}

// strangerClient hands a run over to the server in dir and prints what it
// found, one field a line.
func strangerClient(dir string) {
	if os.Geteuid() != strangerUID {
		os.Stdout.WriteString("the client runs as uid " + strconv.Itoa(os.Geteuid()) + "\n")
		os.Exit(1)
	}
	fds := []int{int(os.Stdin.Fd()), int(os.Stdout.Fd()), int(os.Stderr.Fd())}
	r := HandOver(context.Background(), dir, Request{Args: []string{"--", "true"}, Dir: "/"}, fds)
	os.Stdout.WriteString("outcome=" + strconv.Itoa(int(r.Outcome)) + "\nreason=" + r.Reason + "\nwarn=" + r.Warn + "\n")
	os.Exit(0)
}
