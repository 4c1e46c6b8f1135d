package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/internal/testsupport"
)

// syncBuffer is a log destination the broker's goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBoxedFloodIsCounted: a boxed process dials the approvals socket
// 400 times. Each dial is refused (another namespace); one warning line
// per refusal — the old shape — would be 400 lines in the person's
// terminal and log. The broker writes a bounded number of lines and
// records, and its records still count every refusal.
func TestBoxedFloodIsCounted(t *testing.T) {
	const bwrap = "/usr/bin/bwrap"
	const n = 400
	testsupport.Require(t, testsupport.Bwrap)
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	dir := socketDir(t)
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(logPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	var logBuf syncBuffer
	b := newBroker(t, Options{SocketDir: dir, Audit: al,
		Log: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	// The socket is there while a call waits for a person.
	pend := ask(b, gitPush(), time.Hour)
	waitPending(t, dir, 1)

	r, w, _ := os.Pipe()
	argv := []string{bwrap, "--unshare-user", "--unshare-pid", "--die-with-parent",
		"--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--", exe, "-test.run=^TestOtherUserRefused$"}
	p, err := os.StartProcess(bwrap, argv, &os.ProcAttr{
		Env:   []string{"AIRLOCK_APPROVALS_ATTACK=" + b.SocketPath(), fmt.Sprintf("AIRLOCK_APPROVALS_ATTACK_N=%d", n)},
		Files: []*os.File{nil, w, w},
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	r.Close()
	st, _ := p.Wait()
	if !strings.Contains(string(out), "reply:") {
		testsupport.Missing(t, "bubblewrap cannot make a box here (%v): %s", st, out)
	}
	b.Close()
	pend.wait(t)

	lines := strings.Count(logBuf.String(), "\n")
	if lines > audit.DefaultBurst+5 {
		t.Fatalf("%d refused dials wrote %d log lines, want at most %d", n+1, lines, audit.DefaultBurst+5)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var one, counted int64
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var rec struct {
			Kind   string `json:"kind"`
			Fields struct {
				Coalesced struct {
					Count int64 `json:"count"`
				} `json:"coalesced"`
			} `json:"fields"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		switch rec.Kind {
		case "approvals.refused":
			one++
		case "approvals.refused.coalesced":
			counted += rec.Fields.Coalesced.Count
		}
	}
	if one+counted != n+1 {
		t.Fatalf("%d refusals recorded + %d counted, want %d", one, counted, n+1)
	}
	t.Logf("%d refused dials: %d log lines, %d records of one, %d counted", n+1, lines, one, counted)
}
