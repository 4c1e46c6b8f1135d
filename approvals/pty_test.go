package approvals

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// openPty returns the two ends of a new pseudo-terminal.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testsupport.Missing(t, "no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		testsupport.Missing(t, "unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		testsupport.Missing(t, "ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		testsupport.Missing(t, "open pts: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// TestTypeAheadIsDiscarded types an answer on a real terminal before the
// question is shown: it must not answer the question.
func TestTypeAheadIsDiscarded(t *testing.T) {
	master, slave := openPty(t)
	b := newBroker(t, Options{Terminal: slave, Person: "tester"})
	fmt.Fprint(master, "o\n")
	// Wait until the line discipline holds the typed line.
	for i := 0; i < 1000; i++ {
		if n, _ := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ); n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	a := ask(b, gitPush(), time.Hour)
	out := bufio.NewReader(master)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "[d]eny") {
		line, err := out.ReadString(' ')
		if err != nil {
			t.Fatalf("reading the prompt: %v", err)
		}
		seen.WriteString(line)
	}
	// Read the rest of the prompt line so the echo of our answer follows.
	time.Sleep(20 * time.Millisecond)
	fmt.Fprint(master, "d\n")
	if o := a.wait(t); o.Answer != Deny {
		t.Fatalf("got %v, want deny: the typed-ahead line answered the question", o.Answer)
	}
}
