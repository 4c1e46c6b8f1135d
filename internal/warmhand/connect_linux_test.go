package warmhand

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestIsRunAsMain: Start takes for `airlock run` exactly what the airlock
// binary's main hands to the CLI's run, and nothing main gives another
// mode first: the proxy command git runs in a box, named airlock-connect,
// for a host named "run".
func TestIsRunAsMain(t *testing.T) {
	for _, args := range [][]string{
		{"airlock", "run", "--", "true"},
		{"/usr/bin/airlock", "run"},
		{"airlock"},
		{"airlock", "--json", "run"},
		{"airlock", "warm"},
		{"airlock-connect", "run", "22"},
		{"/run/airlock/bin/airlock-connect", "run", "22"},
		{"airlock", forward.ConnectArg, "run", "22"},
	} {
		want := len(args) > 1 && args[1] == "run" && !forward.IsConnect(args)
		if got := isRun(args); got != want {
			t.Errorf("isRun(%q) = %v, main runs `airlock run`: %v", args, got, want)
		}
	}
}

// TestConnectNotHandedOver: the binary run as airlock-connect with a host
// named "run" is the proxy command, as main has it: it is not handed to a
// warm server, which would run "22" as a command and answer for it.
func TestConnectNotHandedOver(t *testing.T) {
	testsupport.Require(t, testsupport.Proc)
	runtime := t.TempDir()
	dir := filepath.Join(runtime, "airlock")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: SocketPath(dir), Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan string, 1)
	go func() {
		// A server of this user that runs whatever it is handed, and
		// says it ended with 42.
		c, err := l.AcceptUnix()
		if err != nil {
			served <- ""
			return
		}
		defer c.Close()
		b, oob := make([]byte, MaxRequest), make([]byte, 256)
		n, oobn, _, _, _ := c.ReadMsgUnix(b, oob)
		closeRights(oob[:oobn])
		served <- string(b[:n])
		c.Write([]byte(`{"answer":"accepted"}`))
		c.Write([]byte(`{"answer":"exit","code":42}`))
	}()
	exe := filepath.Join(t.TempDir(), "airlock-connect")
	testsupport.CopyBin(t, testsupport.AirlockBin(t), exe, 0o755)
	cmd := exec.Command(exe, "run", "22")
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = []string{"XDG_RUNTIME_DIR=" + runtime, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("airlock-connect run 22: %v, want the proxy command's exit 1\n%s", err, out)
	}
	if ee.ExitCode() == 42 {
		t.Fatalf("airlock-connect run 22 was handed to the warm server, which answered 42\n%s", out)
	}
	if ee.ExitCode() != 1 || !strings.Contains(string(out), "no proxy configured") {
		t.Errorf("airlock-connect run 22: exit %d, want the proxy command's 1\n%s", ee.ExitCode(), out)
	}
	l.Close()
	if req := <-served; req != "" {
		t.Errorf("the warm server was sent a request: %q", req)
	}
}

// closeRights closes the descriptors a control message brought: the
// client's streams, which a test's pipe waits on.
func closeRights(oob []byte) {
	msgs, _ := syscall.ParseSocketControlMessage(oob)
	for _, m := range msgs {
		fds, _ := syscall.ParseUnixRights(&m)
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}
}
