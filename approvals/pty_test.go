package approvals

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// TestTypeAheadIsDiscarded types an answer on a real terminal before the
// question is shown: it must not answer the question.
func TestTypeAheadIsDiscarded(t *testing.T) {
	master, slave := testsupport.OpenPTY(t)
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
