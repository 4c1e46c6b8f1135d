package runner

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/wire"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox"
)

// hostSockets counts this process's open sockets.
func hostSockets(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// TestNetBoxWithoutInit: a tier-1 box with network runs no airlock process
// inside. Its way out is the two loopback ports, listening in its own
// network namespace and held by airlock on the host; its command inherits
// no descriptor of airlock's (not the socket pair the listeners were handed
// out on), the proxy's socket is not in the box, and when the run ends no
// listener and no socket of the run is left on the host.
func TestNetBoxWithoutInit(t *testing.T) {
	requireTier1(t)
	for _, own := range []bool{false, true} {
		name := "over the proxy's socket"
		if own {
			name = "the proxy's own accept loop"
		}
		t.Run(name, func(t *testing.T) { netBoxWithoutInit(t, own) })
	}
}

// netBoxWithoutInit is TestNetBoxWithoutInit with the box's connections
// handed to the proxy's socket, or accepted by the proxy itself (own).
func netBoxWithoutInit(t *testing.T, own bool) {
	spec := baseSpec(t)
	var px *egress.Proxy
	px, spec.Net = netProxy(t)
	if own {
		spec.Net.Serve = px.ServeBox
	}
	before := hostSockets(t)
	// The proxy refuses every destination: the request reaches it and
	// comes back refused.
	o := runIn(t, sandbox.Tier1, spec, "", "sh", "-c",
		`ls /proc/self/fd; test -e /run/airlock/egress.sock && echo proxy-socket-$((6*7)); cat /proc/net/tcp; cat /proc/1/cmdline; echo;
		if command -v curl >/dev/null; then curl -sS -x "$HTTP_PROXY" http://192.0.2.1:80/ 2>&1; else echo no-curl; fi`)
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d: %s", o.err, o.res.ExitCode, o.stderr)
	}
	lines := strings.Split(o.stdout, "\n")
	// ls's own descriptor for /proc/self/fd is 3.
	if got := strings.Join(lines[:4], " "); got != "0 1 2 3" || strings.HasPrefix(lines[4], "4") {
		t.Errorf("the command holds descriptors %q, want only 0 1 2 (and ls's 3)", lines[:5])
	}
	if strings.Contains(o.stdout, "proxy-socket-42") {
		t.Errorf("the egress proxy's socket is inside a box without an init: %s", o.stdout)
	}
	var listening []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 3 && f[3] == "0A" { // TCP_LISTEN
			listening = append(listening, f[1])
		}
	}
	sort.Strings(listening)
	if got := strings.Join(listening, " "); got != "0100007F:0438 0100007F:0C38" {
		t.Errorf("the box's listening sockets are %q, want 127.0.0.1:1080 and 127.0.0.1:3128 only", got)
	}
	if strings.Contains(o.stdout, sandbox.InitArg+"\x00--config-fd") {
		t.Error("the box's PID 1 is airlock's init")
	}
	if !strings.Contains(strings.Join(o.res.Description.Notes, "\n"), "handed them to airlock on the host") {
		t.Errorf("the evidence does not say where the listeners went: %q", o.res.Description.Notes)
	}
	if !strings.Contains(o.stdout, "no-curl") && !strings.Contains(o.stdout, "blocked by airlock egress policy: 192.0.2.1:80") {
		t.Errorf("a request through the box's port did not come back refused by the proxy: %q", o.stdout)
	}
	if after := hostSockets(t); after != before {
		t.Errorf("the run left %d sockets open on the host (before %d, after %d)", after-before, before, after)
	}
}

// TestNetBoxRefusedByProxy: a box whose token the proxy does not accept
// never starts: the check runs on the host before bubblewrap.
func TestNetBoxRefusedByProxy(t *testing.T) {
	requireTier1(t)
	spec := baseSpec(t)
	_, spec.Net = netProxy(t)
	other, err := wire.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	spec.Net = &sandbox.NetSpec{ProxySocket: spec.Net.ProxySocket, Token: other}
	mark := filepath.Join(spec.Workdir, "ran")
	spec.Write, spec.Writable = []string{spec.Workdir}, true
	_, err = Run(context.Background(), testExe(t), Request{Argv: []string{"touch", mark}, Spec: spec, Tier: sandbox.Tier1})
	if errs.ClassOf(err) != errs.Unavailable || !strings.Contains(err.Error(), "did not accept this box") {
		t.Fatalf("got %v, want the proxy's refusal (unavailable)", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the command ran in a box the proxy refused")
	}
}
