package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// canary is an HTTP server on loopback that counts the connections it
// accepts; a refused attempt must leave the count at zero.
type canary struct {
	port  int
	conns atomic.Int64
}

func newCanary(t *testing.T, name string) *canary {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &canary{port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "canary %s\n", name)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				c.conns.Add(1)
			}
		},
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return c
}

func (c *canary) url(host string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(c.port)) + "/"
}

// sshCanary accepts TCP connections, says an SSH banner and counts them.
func sshCanary(t *testing.T) (port int, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			io.WriteString(c, "SSH-2.0-airlock-canary\r\n")
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, conns
}

// TestEgressThroughTheBox runs curl in a real tier-1 box: it reaches exactly
// the destination the policy allows, by every way a tool asks the proxy;
// everything else is refused with a line the agent can read, recorded in
// the audit log, and the refused canary never sees a connection. A curl
// that ignores the proxy has no way out at all, though the same command
// reaches the canary unconfined.
func TestEgressThroughTheBox(t *testing.T) {
	requireBwrap(t)
	t.Run("tier1", func(t *testing.T) { egressThroughTheBox(t, "1", "") })
	// Tier 2: the same forwarder in a gVisor box, reaching the proxy
	// through the socket's directory (runsc --host-uds=open).
	t.Run("tier2", func(t *testing.T) {
		requireRoot(t)
		if _, err := sandbox.Resolve(sandbox.Tier2, sandbox.ProbeHost()); err != nil {
			testsupport.Missing(t, "tier 2 unavailable here: %v", err)
		}
		runsc, err := exec.LookPath("runsc")
		if err != nil {
			testsupport.Missing(t, "no runsc on PATH: %v", err)
		}
		egressThroughTheBox(t, "2", filepath.Dir(runsc))
	})
}

// egressThroughTheBox is TestEgressThroughTheBox at one tier; bin is a
// directory airlock's PATH needs for it ("" none).
func egressThroughTheBox(t *testing.T, tier, bin string) {
	allowed := newCanary(t, "allowed")
	refused := newCanary(t, "refused")
	sshPort, sshConns := sshCanary(t)
	h0 := newHome(t)
	if bin != "" {
		h0.environ[0] += ":" + bin // PATH
	}
	// Every boxed run asks for the tier under test.
	h := boxedAt{h0, tier}
	h0.write("airlock.yaml", fmt.Sprintf(`
shell:
  allow: [curl, sh, ssh, git]
net:
  allow: ["127.0.0.1:%d", "127.0.0.1:%d"]
limits:
  wall: 60s
`, allowed.port, sshPort))
	curl := []string{"run", "--", "curl", "-sS", "--max-time", "20"}

	reach := []struct {
		name string
		args []string
	}{
		{"absolute-form", append(curl, allowed.url("127.0.0.1"))},
		{"CONNECT", append(curl, "--proxytunnel", allowed.url("127.0.0.1"))},
		{"SOCKS5", []string{"run", "--", "sh", "-c", `curl -sS --max-time 20 --proxy "$ALL_PROXY" ` + allowed.url("127.0.0.1")}},
	}
	for _, tc := range reach {
		t.Run("reaches "+tc.name, func(t *testing.T) {
			r := h.run(tc.args...)
			if r.Code != 0 || r.Stdout != "canary allowed\n" {
				t.Fatalf("got exit %d, stdout %q, stderr %q; want the allowed canary", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
	if allowed.conns.Load() != int64(len(reach)) {
		t.Fatalf("allowed canary saw %d connections, want %d", allowed.conns.Load(), len(reach))
	}

	// The attack works unconfined: the same curl, ignoring proxies, reaches
	// the canary from outside a box.
	if r := h0.run("run", "--sandbox", "off", "--", "curl", "-sS", "--max-time", "20", "--noproxy", "*", refused.url("127.0.0.1")); r.Code != 0 || refused.conns.Load() == 0 {
		t.Skipf("the unconfined baseline did not reach the canary (exit %d, %s); the refusals below would prove nothing", r.Code, r.Stderr)
	}
	refused.conns.Store(0)

	for _, host := range []string{"127.0.0.1", "127.1", "0x7f.0.0.1", "2130706433", "localhost", "::ffff:127.0.0.1"} {
		t.Run("refused "+host, func(t *testing.T) {
			r := h.run(append(curl, "-w", "\n%{http_code}\n", refused.url(host))...)
			if !strings.Contains(r.Stdout, "blocked by airlock egress policy: ") || !strings.HasSuffix(r.Stdout, "\n403\n") {
				t.Fatalf("got exit %d, stdout %q, stderr %q; want the 403 refusal line", r.Code, r.Stdout, r.Stderr)
			}
		})
		t.Run("refused tunnel "+host, func(t *testing.T) {
			if r := h.run(append(curl, "--proxytunnel", refused.url(host))...); r.Code == 0 {
				t.Fatalf("got exit 0, stdout %q; want curl to fail on the refused CONNECT", r.Stdout)
			}
		})
	}
	t.Run("ignoring the proxy", func(t *testing.T) {
		for _, u := range []string{refused.url("127.0.0.1"), allowed.url("127.0.0.1")} {
			if r := h.run(append(curl, "--noproxy", "*", u)...); r.Code == 0 {
				t.Fatalf("curl --noproxy %s: exit 0, stdout %q; want no way out", u, r.Stdout)
			}
		}
	})
	t.Run("DNS fails fast", func(t *testing.T) {
		r := h.run("run", "--", "sh", "-c", "curl -sS --max-time 20 --noproxy '*' http://example.invalid/; echo rc=$?")
		if !strings.Contains(r.Stdout, "rc=6") {
			t.Fatalf("got %q %q; want curl's could-not-resolve (6)", r.Stdout, r.Stderr)
		}
	})
	t.Run("git over ssh through the ProxyCommand", func(t *testing.T) {
		// git runs ssh from GIT_SSH_COMMAND, whose ProxyCommand is airlock's
		// own connect mode; the canary only says a banner, so ssh fails after
		// connecting, which is all this needs.
		r := h.run("run", "--", "git", "ls-remote", fmt.Sprintf("ssh://git@127.0.0.1:%d/repo", sshPort))
		if sshConns.Load() != 1 {
			t.Fatalf("ssh canary saw %d connections, want 1 (through the ProxyCommand)\n%s%s", sshConns.Load(), r.Stdout, r.Stderr)
		}
		r = h.run("run", "--", "git", "ls-remote", fmt.Sprintf("ssh://git@127.0.0.1:%d/repo", refused.port))
		if r.Code == 0 || !strings.Contains(r.Stderr, "blocked by airlock egress policy: 127.0.0.1:"+strconv.Itoa(refused.port)) {
			t.Fatalf("refused ssh: got exit %d, stderr %q; want the refusal line from the ProxyCommand", r.Code, r.Stderr)
		}
	})
	if n := refused.conns.Load(); n != 0 {
		t.Fatalf("refused canary accepted %d connections from the box, want 0", n)
	}

	data, err := os.ReadFile(filepath.Join(h0.State, "state", "airlock", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	if !strings.Contains(log, `"decider":"egress"`) {
		t.Fatalf("audit log has no egress decision:\n%s", log)
	}
	for _, want := range []string{strconv.Itoa(allowed.port), strconv.Itoa(refused.port)} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log does not mention port %s", want)
		}
	}
}

// boxedAt runs airlock's run at one sandbox tier.
type boxedAt struct {
	*home
	tier string
}

// run is home.run with --sandbox TIER after "run".
func (b boxedAt) run(args ...string) result {
	if len(args) > 0 && args[0] == "run" {
		args = append([]string{"run", "--sandbox", b.tier}, args[1:]...)
	}
	return b.home.run(args...)
}
