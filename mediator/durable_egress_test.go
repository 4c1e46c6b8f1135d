package mediator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// countingServer is a loopback HTTP server counting the connections that
// reach it; first is closed at the first.
type countingServer struct {
	port  int
	conns atomic.Int64
	first chan struct{}
}

func startCountingServer(t *testing.T) *countingServer {
	t.Helper()
	s := &countingServer{first: make(chan struct{})}
	var once sync.Once
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "reached %s\n", r.URL.Path)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
			once.Do(func() { close(s.first) })
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	s.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return s
}

// TestEgressWaitsForDurable runs curl in a real tier-1 box with a network:
// while ExecOptions.Durable has not returned, the connection the policy
// allows does not reach the server; once it returns, it does; when it
// fails, the connection is refused with the reason (not the cause) and the
// server sees nothing.
func TestEgressWaitsForDurable(t *testing.T) {
	srv, p := loopbackEgress(t, "sh, curl")
	w := policy.World{Workdir: t.TempDir(), Home: "/home/someone", PATH: strings.Split(BoxPATH, ":"), LookPath: exec.LookPath}
	k, err := New(p, w, Options{Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t), Environ: []string{"PATH=" + BoxPATH}})
	if err != nil {
		t.Fatal(err)
	}
	curl := func(path string) Call {
		return Call{Kind: KindShell, Command: fmt.Sprintf("curl -sS --max-time 30 http://127.0.0.1:%d/%s", srv.port, path)}
	}

	t.Run("held until durable", func(t *testing.T) {
		asked, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		durable := func() error {
			once.Do(func() { close(asked) })
			<-release
			return nil
		}
		var out strings.Builder
		done := make(chan error, 1)
		go func() {
			_, err := k.Exec(context.Background(), curl("held"), ExecOptions{Stdout: &out, Stderr: &out, Durable: durable})
			done <- err
		}()
		select {
		case <-asked:
		case <-srv.first:
			close(release)
			<-done
			t.Fatalf("the connection reached the server before the records were durable (%s)", out.String())
		case err := <-done:
			close(release)
			t.Fatalf("the command ended without waiting for the records: %v (%s)", err, out.String())
		case <-time.After(60 * time.Second):
			close(release)
			t.Fatal("no connection waited for the records within 60s")
		}
		// The connection waits: give it time to go out if it were not held.
		select {
		case <-srv.first:
			close(release)
			<-done
			t.Fatalf("the connection reached the server while the records were not durable (%s)", out.String())
		case <-time.After(500 * time.Millisecond):
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("run: %v (%s)", err, out.String())
		}
		if got := srv.conns.Load(); got != 1 || !strings.Contains(out.String(), "reached /held") {
			t.Fatalf("once durable, the server saw %d connections and the box %q; want one, reached", got, out.String())
		}
	})

	t.Run("refused when not durable", func(t *testing.T) {
		before := srv.conns.Load()
		var calls atomic.Int64
		durable := func() error {
			calls.Add(1)
			return errors.New("fsync audit.jsonl: no space left on device")
		}
		var out strings.Builder
		if _, err := k.Exec(context.Background(), curl("lost"), ExecOptions{Stdout: &out, Stderr: &out, Durable: durable}); err != nil {
			t.Fatalf("run: %v (%s)", err, out.String())
		}
		o := out.String()
		t.Log(o)
		if got := srv.conns.Load() - before; got != 0 {
			t.Fatalf("the server saw %d connections under records that could not be made durable (%s)", got, o)
		}
		if calls.Load() == 0 || !strings.Contains(o, "could not be made durable") || strings.Contains(o, "no space left") {
			t.Fatalf("durable asked %d times; the box saw %q, want the reason without its cause", calls.Load(), o)
		}
	})
}
