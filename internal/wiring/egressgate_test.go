package wiring

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/sandbox"
)

// TestEgressBehindDurableGate runs curl through Kernel.Exec in a real
// tier-1 box with a network: the connection the policy allows waits on
// the same gate as the output (ExecOptions.Durable is the gate's wait),
// and both pass once the decision's fsync, run beside the start, is done.
func TestEgressBehindDurableGate(t *testing.T) {
	testsupport.Require(t, testsupport.Root, testsupport.Program("curl"))
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "reached %s\n", r.URL.Path)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	env := stateEnv(t.TempDir())
	os.MkdirAll(env["XDG_RUNTIME_DIR"], 0o700)
	work := t.TempDir()
	pol := fmt.Sprintf("shell: {allow: [sh, curl]}\nnet: {allow: [\"127.0.0.1:%d\"]}\n", port)
	if err := os.WriteFile(filepath.Join(work, "airlock.yaml"), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := Build(Config{Dir: work, Getenv: func(k string) string { return env[k] }, Tier: sandbox.Tier1,
		Exe: testsupport.AirlockBin(t), Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var out strings.Builder
	_, err = k.Exec(context.Background(), mediator.Call{Kind: mediator.KindShell,
		Command: fmt.Sprintf("echo first; curl -sS --max-time 30 http://127.0.0.1:%d/gated", port)},
		mediator.ExecOptions{Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run: %v (%s)", err, out.String())
	}
	if conns.Load() != 1 || out.String() != "first\nreached /gated\n" {
		t.Fatalf("the server saw %d connections and the box %q; want one, and all of the output", conns.Load(), out.String())
	}
}
