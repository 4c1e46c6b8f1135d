package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// runTo runs the airlock binary with its standard output and error on out
// (and err) and returns what came out of the other end of the terminal (or
// of the pipe).
func runTo(t *testing.T, pty bool, args ...string) []byte {
	t.Helper()
	bin := testsupport.AirlockBin(t)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_RUNTIME_DIR=" + filepath.Join(home, "run"), "PATH=/usr/bin:/bin"}
	if !pty {
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Run()
		return out.Bytes()
	}
	master, slave := testsupport.OpenPTY(t)
	// Raw, so the terminal passes the bytes as they were written.
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("tcgets: %v", err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatalf("tcsets: %v", err)
	}
	cmd.Stdout, cmd.Stderr = slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatalf("start airlock: %v", err)
	}
	slave.Close()
	done := make(chan []byte)
	go func() {
		// The master reads EIO once every holder of the slave is gone.
		b, _ := io.ReadAll(master)
		done <- b
	}()
	cmd.Wait()
	select {
	case b := <-done:
		return b
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal's output did not end")
		return nil
	}
}

// TestRunOutputToTerminalIsEscaped: a command that writes an OSC 52
// clipboard write, an OSC 8 hyperlink, a title, a DCS and a device status
// query reaches the person's terminal with those sequences shown, not
// obeyed; colours pass. The same output into a pipe (a file, another
// program) is passed unchanged — that is what a terminal got before
// airlock run filtered it.
func TestRunOutputToTerminalIsEscaped(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("isolation: none\nshell:\n  allow: [printf]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const payload = `\033]52;c;cm0gLXJmIH4K\a\033]8;;file:///etc/passwd\033\\link\033]8;;\033\\\033]0;owned\a\033P+q544e\033\\\033[6n\033[31mred\033[0m\n`
	args := []string{"run", "--policy", pol, "--sandbox", "off", "--", "printf", payload}
	raw := []string{"\x1b]52;c;", "\x1b]8;;file://", "\x1b]0;owned", "\x1bP+q", "\x1b[6n"}

	piped := runTo(t, false, args...)
	if !bytes.Contains(piped, []byte("\x1b[31mred\x1b[0m")) {
		t.Fatalf("piped output %q: want the command's bytes unchanged", piped)
	}
	for _, r := range raw {
		if !bytes.Contains(piped, []byte(r)) {
			t.Fatalf("piped output %q lacks %q: the payload did not reach the pipe as written", piped, r)
		}
	}

	got := runTo(t, true, args...)
	for _, r := range raw {
		if bytes.Contains(got, []byte(r)) {
			t.Errorf("the terminal received %q as a live sequence: %q", r, got)
		}
	}
	if !bytes.Contains(got, []byte("\x1b[31mred\x1b[0m")) {
		t.Errorf("terminal output %q: want the colours passed", got)
	}
	if !strings.Contains(string(got), "52;c;cm0gLXJmIH4K") {
		t.Errorf("terminal output %q: want the clipboard sequence shown", got)
	}
}
