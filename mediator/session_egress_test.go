package mediator

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// TestSessionEgressConformance runs the same calls with network — one the
// policy's net.allow lets through to a loopback server, one it refuses,
// one that makes no connection — in a box of their own and in a session's
// warm boxes: each call gets the same answer and the same egress records
// (verdict, destination, rule) either way, and no record of one call is
// another's.
func TestSessionEgressConformance(t *testing.T) {
	srv, p := loopbackEgress(t, `sh, curl, "true"`)
	calls := []struct {
		name, command, want string
	}{
		{"allowed", fmt.Sprintf("curl -sS --max-time 30 http://127.0.0.1:%d/warm", srv.port), "reached /warm"},
		{"refused", "curl -sS --max-time 30 http://127.0.0.1:9/ 2>&1", "blocked by airlock egress policy"},
		{"no connection", "true", ""},
	}
	type seen struct {
		out  string
		recs []string
		warm bool
	}
	run := func(t *testing.T, session bool) []seen {
		rec := &memRecorder{}
		w := policy.World{Workdir: t.TempDir(), Home: "/home/someone", PATH: strings.Split(BoxPATH, ":"), LookPath: exec.LookPath}
		k, err := New(p, w, Options{Tier: sandbox.Tier1, Exe: testsupport.AirlockBin(t), Environ: []string{"PATH=" + BoxPATH}, Recorder: rec})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if session {
			s := k.NewSession(time.Minute)
			t.Cleanup(s.Close)
			ctx = s.Bind(ctx)
		}
		var out []seen
		for round := 0; round < 2; round++ {
			for _, c := range calls {
				var b strings.Builder
				res, err := k.Exec(ctx, Call{Kind: KindShell, Command: c.command}, ExecOptions{Stdout: &b, Stderr: &b})
				if err != nil || !strings.Contains(b.String(), c.want) {
					t.Fatalf("%s: %v, output %q, want %q", c.name, err, b.String(), c.want)
				}
				digest := Call{Kind: KindShell, Command: c.command}.Digest()
				var recs []string
				rec.mu.Lock()
				for _, r := range rec.recs {
					if strings.HasPrefix(r.Kind, "egress") {
						if r.CallDigest != digest {
							t.Errorf("%s: an egress record of another call (%s)", c.name, r.CallDigest)
						}
						recs = append(recs, fmt.Sprintf("%s %s %s %s", r.Kind, r.Verdict, r.Rule, r.Reason))
					}
				}
				rec.recs = nil
				rec.mu.Unlock()
				notes := strings.Join(res.Description.Notes, "\n")
				out = append(out, seen{out: b.String(), recs: recs, warm: strings.Contains(notes, "warm box: call")})
			}
		}
		return out
	}
	cold, warm := run(t, false), run(t, true)
	for i := range cold {
		c := calls[i%len(calls)]
		if cold[i].warm || !warm[i].warm {
			t.Errorf("%s: warm %v in a box of its own, %v in the session, want false and true", c.name, cold[i].warm, warm[i].warm)
		}
		if got, want := strings.Join(warm[i].recs, "; "), strings.Join(cold[i].recs, "; "); got != want {
			t.Errorf("%s: egress records in a warm box %q, in a box of its own %q", c.name, got, want)
		}
		if got := len(cold[i].recs) != 0; got != (c.want != "") {
			t.Errorf("%s: egress records %q, want some only for a call that connected", c.name, cold[i].recs)
		}
	}
}

// loopbackEgress is a loopback server counting its connections and a
// policy that lets the shell programs named run and reach that server,
// for tests of curl in a real tier-1 box with a network.
func loopbackEgress(t *testing.T, shell string) (*countingServer, *policy.Policy) {
	t.Helper()
	testsupport.Require(t, testsupport.Root, testsupport.Program("curl"))
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	srv := startCountingServer(t)
	p, err := policy.Parse("test.yaml", []byte(fmt.Sprintf("shell: {allow: [%s]}\nnet: {allow: [\"127.0.0.1:%d\"]}\n", shell, srv.port)))
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}
