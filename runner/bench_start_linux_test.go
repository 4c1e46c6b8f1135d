package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxinit"
)

// bareBwrap is the limit `airlock run -- /bin/true` is measured against:
// bubblewrap with the namespaces airlock's box has (user, mount, pid, ipc,
// uts, net, cgroup), no capabilities and an environment built from nothing,
// the system read-only and private /dev, /proc and /tmp.
var bareBwrap = []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
	"--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
	"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "/bin/true"}

// startSubject is one way of running /bin/true the benchmark times.
type startSubject struct {
	name string
	argv []string
	dir  string
	env  []string
	// traced subjects are airlock runs that print their start trace.
	traced bool
	times  []time.Duration
	traces []starttrace.Trace
}

// BenchmarkStart times `airlock run -- /bin/true` (the built binary,
// AIRLOCK_BIN or one built from this checkout) against a bare bubblewrap
// with comparable namespaces, alternating in one run so the host's load
// weighs on all alike: with the default policy (limits, seccomp, egress
// off; target at most 1.5× bubblewrap), with a policy that allows a
// loopback host (the forwarder and proxy up; target at most 2×), the
// airlock binary's own start (what the in-box init pays before it does
// anything), and the peer sandboxes when installed (Codex's `codex
// sandbox`, the native binary without its node wrapper, and Anthropic's
// `srt`). It reports every median and each ratio to bubblewrap, and logs
// the start trace of the airlock runs (AIRLOCK_TRACE_START): the median of
// each phase.
//
// The box's /etc as one view bound once (sandbox.CacheConfig.EtcViewDir), against the
// tree before it (27 binds of the host's files and 6 generated files, each
// a mount, a remount and a reading of the mount table for bubblewrap), in
// one run on the 2-core machine with other work on it, 40 runs each:
//
//	go build -o bin/airlock ./cmd/airlock
//	AIRLOCK_BIN=$PWD/bin/airlock AIRLOCK_START_BASELINE=<the old build> \
//	  go test -run XXX -bench 'Start$' -benchtime 40x ./runner/
//
//	bubblewrap                   8.62 ms
//	airlock run      44.61 ms (5.18×)   before 49.62 ms (5.76×)
//	  box-run        16.26 ms           before 23.61 ms
//	  plan            2.01 ms           before  1.13 ms (etc-view 0.70)
//	with network     65.44 ms (7.60×)   before 74.13 ms (8.60×)
//	  box-run        40.75 ms           before 44.69 ms
//
// The box's mounts went from about 70 to 36. What is left of the gap is
// the Go start of airlock (about 11 ms here) and, with network, of the
// in-box init (the same binary: init-start), and bubblewrap's own covers
// of /proc and /dev.
//
// A box with network has no init since: its exec step makes the
// forwarder's listeners and hands them to the host, which the trace shows
// inside box-run as box-exec-step (bubblewrap's setup and the step's Go
// start, init-start's binary) and box-listen. Against the init, two runs
// of 40 each on the 2-core machine under other work:
//
//	with network     39.41 ms (5.33×)   before 39.89 ms (5.40×)
//	  box-run        20.55 ms           before 21.22 ms
//	  box-exec-step  16.36 ms, box-listen 0.05 ms
//	with network     29.33 ms (4.03×)   before 30.10 ms (4.14×)
//	  box-run        15.86 ms           before 16.46 ms
//	  box-exec-step  12.84 ms, box-listen 0.06 ms
//
// Most of what a box with network adds to one without is now the step's Go
// start: the binary the step runs is what lowers it further.
//
// warm and warm-net are the same runs handed to `airlock warm` (started
// here with a runtime directory of its own); the server's side is printed
// from its own trace, each phase's mean over its calls. One run of 30 on
// the 2-core machine under other work:
//
//	bubblewrap        6.94 ms
//	warm             17.70 ms (2.55×)   cold 25.20 ms (3.63×), baseline 30.95 ms (4.46×)
//	  go-start 3.48, warm-connect 0.14, warm-answer 0.78, warm-call 10.39
//	warm-net         29.02 ms (4.18×)   cold 33.28 ms (4.80×)
//
// A warm call is the client's Go start, the hand-over (the server's checks
// of the caller: warm-answer) and the server's run of it (warm-call): the
// kernel built again for the call (kernel-build, probe, audit, about 2 ms)
// and the warm box's call (runner's BenchmarkWarmTrue, about 8 ms in the
// same hour). With network the box is a fresh one: warm boxes have none yet.
//
// The server's side of one warm call, traced phase by phase (medians over
// 60 calls on the 2-core machine under other work, ms): warm-check 1.3
// (the caller's checks, before the answer); then warm-run: the kernel's
// build 0.4 (1.0 before the approvals socket was made only for a call put
// to a person, and the audit tail taken up from the line last written),
// the decision and its record 0.2, warm-plan 1.0-1.8 (the fingerprint's
// plan: etc-view 0.5, the pins 0.2), warm-box-call (the box's own call,
// BenchmarkWarmTrue), the run's record 0.2-0.4 and audit-sync 0.4-4 (the
// fdatasync the result waits for, as much the disk's load as anything),
// and the kernel's close 0.1. warm-take is the wait for a box of the kind
// still being cleared after the call before, 0 unless calls come back to
// back on a loaded host. With AIRLOCK_START_BASELINE, baseline-warm is the
// baseline's runs handed to its own server, whose side is printed too.
// Three runs of 30 in a quiet hour, the client's warm-call against the
// baseline's (the tree before the socket, the audit tail, the fdatasync
// and the early run record above): 4.96, 5.46, 6.16 ms against 5.82,
// 6.39, 6.14 ms (warm 11.18, 12.60, 12.99 ms against 12.79,
// 12.21, 13.62 ms; bubblewrap 7.2-7.9 ms).
func BenchmarkStart(b *testing.B) {
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(b, "tier 1 unavailable here: %s", r.Why)
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		testsupport.Missing(b, "bubblewrap is not installed: %v", err)
	}
	exe := testsupport.AirlockBin(b)
	initBin, _ := sandbox.InitBinary(exe)
	home, work, netWork := b.TempDir(), b.TempDir(), b.TempDir()
	// The loopback host is never connected to: /bin/true only needs the
	// forwarder and the proxy up.
	if err := os.WriteFile(filepath.Join(netWork, "airlock.yaml"), []byte("net: {allow: [\"127.0.0.1:9\"]}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	// airlock's state (audit log, caches) goes to a home of its own, so
	// the runs neither read nor grow the caller's.
	base := append(withoutEnv(os.Environ(), "HOME", starttrace.Env, "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "AIRLOCK_WARM"), "HOME="+home)
	// The cold runs never hand over (a server of the caller's may be up);
	// the warm ones hand over to the server started below, in a runtime
	// directory of the benchmark's own.
	env := append(base[:len(base):len(base)], "AIRLOCK_WARM=off")
	runtimeDir := b.TempDir()
	warmEnv := append(base[:len(base):len(base)], "XDG_RUNTIME_DIR="+runtimeDir)
	srv := startWarmServer(b, exe, warmEnv, filepath.Join(runtimeDir, "airlock", "warm.sock"))
	subjects := []*startSubject{
		{name: "bwrap", argv: append([]string{bwrap}, bareBwrap...)},
		{name: "airlock", argv: []string{exe, "run", "--", "/bin/true"}, dir: work, env: env, traced: true},
		{name: "airlock-net", argv: []string{exe, "run", "--", "/bin/true"}, dir: netWork, env: env, traced: true},
		// `airlock warm` serving the run: the client's start and hand-over
		// in the trace; the server's side is printed from its own trace.
		{name: "warm", argv: []string{exe, "run", "--", "/bin/true"}, dir: work, env: warmEnv, traced: true},
		{name: "warm-net", argv: []string{exe, "run", "--", "/bin/true"}, dir: netWork, env: warmEnv, traced: true},
		// The in-box init's start: the binary the box runs inside
		// (airlock-box beside exe, else exe itself), its runtime and every
		// package's initialisation, before it reads a byte of its
		// configuration (no descriptors named: it exits at once).
		{name: "init-start", argv: []string{initBin, boxinit.Arg}, env: []string{"GOMAXPROCS=1"}},
	}
	// Another build to compare with in the same run (the tree before a
	// change): AIRLOCK_START_BASELINE names its binary. Its warm runs go
	// to its own `airlock warm`, in a runtime directory of its own.
	var oldSrv *warmServer
	if old := os.Getenv("AIRLOCK_START_BASELINE"); old != "" {
		oldRuntime := b.TempDir()
		oldWarmEnv := append(base[:len(base):len(base)], "XDG_RUNTIME_DIR="+oldRuntime)
		subjects = append(subjects,
			&startSubject{name: "baseline", argv: []string{old, "run", "--", "/bin/true"}, dir: work, env: env, traced: true},
			&startSubject{name: "baseline-net", argv: []string{old, "run", "--", "/bin/true"}, dir: netWork, env: env, traced: true})
		// A build from before `airlock warm` has no warm runs to compare.
		if exec.Command(old, "warm", "--help").Run() == nil {
			oldSrv = startWarmServer(b, old, oldWarmEnv, filepath.Join(oldRuntime, "airlock", "warm.sock"))
			subjects = append(subjects,
				&startSubject{name: "baseline-warm", argv: []string{old, "run", "--", "/bin/true"}, dir: work, env: oldWarmEnv, traced: true})
		} else {
			b.Logf("the baseline %s has no airlock warm: no baseline-warm subject", old)
		}
	}
	for _, p := range peerSandboxes(b) {
		subjects = append(subjects, p)
	}
	for _, s := range subjects {
		s.run(b) // once outside the timing: caches warm, every subject works
		s.times, s.traces = nil, nil
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, s := range subjects {
			s.run(b)
		}
	}
	b.StopTimer()
	bw := median(subjects[0].times)
	for _, s := range subjects {
		m := median(s.times)
		b.ReportMetric(msOf(m), s.name+"-ms")
		if s.name != "bwrap" && s.name != "init-start" {
			b.ReportMetric(float64(m)/float64(bw), s.name+"/bwrap")
		}
	}
	serverTrace := srv.stop(b)
	var oldTrace starttrace.Trace
	if oldSrv != nil {
		oldTrace = oldSrv.stop(b)
	}
	if b.N == 1 {
		return // the probe run of the benchmark: its numbers are not kept
	}
	// Printed, not logged: the testing package cuts a benchmark's log to
	// ten lines. The first newline ends the line the benchmark's name is
	// on; its numbers follow on a line of their own.
	fmt.Println()
	for _, s := range subjects {
		if s.traced {
			fmt.Printf("start trace: %s in %s (median of %d runs; wall %.2f ms, bubblewrap %.2f ms):\n%s",
				strings.Join(s.argv[1:], " "), s.name, len(s.traces), msOf(median(s.times)), msOf(bw), breakdown(s.traces))
		}
	}
	// The server's phases are summed over all its calls (the warmup's
	// included): per call is the sum over the count.
	printServer("airlock warm", "warm and warm-net", serverTrace, 2*(b.N+1))
	if oldSrv != nil {
		printServer("the baseline's airlock warm", "baseline-warm", oldTrace, b.N+1)
	}
}

// printServer prints a warm server's trace, each phase's mean over its
// calls.
func printServer(what, subjects string, t starttrace.Trace, calls int) {
	fmt.Printf("start trace: %s, the server's side, mean of %d calls (%s):\n", what, calls, subjects)
	for _, p := range t.Phases {
		indent := ""
		if nested[p.Name] != "" {
			indent = "  "
		}
		fmt.Printf("start trace:   %-26s %6.2f\n", indent+p.Name, p.MS/float64(calls))
	}
}

// warmServer is the `airlock warm` the warm subjects hand over to.
type warmServer struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
}

// startWarmServer starts `airlock warm` with env (its trace on) and waits
// for its socket, sock.
func startWarmServer(b *testing.B, exe string, env []string, sock string) *warmServer {
	s := &warmServer{cmd: exec.Command(exe, "warm", "--idle", "30m")}
	s.cmd.Env = append(append([]string(nil), env...), starttrace.Env+"=1")
	s.cmd.Stderr = &s.stderr
	if err := s.cmd.Start(); err != nil {
		b.Fatalf("start airlock warm: %v", err)
	}
	b.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Lstat(sock); err == nil {
			break
		}
		if i > 500 {
			s.cmd.Process.Kill()
			s.cmd.Wait()
			b.Fatalf("airlock warm did not start: %s", s.stderr.Bytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// stop ends the server and returns its start trace: each phase summed over
// the calls it served.
func (s *warmServer) stop(b *testing.B) starttrace.Trace {
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
	t, ok := traceOf(s.stderr.Bytes())
	if !ok {
		b.Fatalf("airlock warm printed no trace: %s", s.stderr.Bytes())
	}
	return t
}

// run runs the subject once and records its time (and trace).
func (s *startSubject) run(b *testing.B) {
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Dir, cmd.Env = s.dir, s.env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if s.traced {
		cmd.Env = append(append([]string(nil), cmd.Env...), starttrace.Env+"="+strconv.FormatInt(start.UnixNano(), 10))
	}
	err := cmd.Run()
	d := time.Since(start)
	if s.name == "init-start" {
		// It exits 125 having found no configuration; anything else
		// means it did not start as the init.
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 125 {
			b.Fatalf("%s: %v (want exit 125): %s", s.name, err, stderr.Bytes())
		}
	} else if err != nil {
		b.Fatalf("%s: %v: %s", s.name, err, stderr.Bytes())
	}
	s.times = append(s.times, d)
	if s.traced {
		t, ok := traceOf(stderr.Bytes())
		if !ok {
			b.Fatalf("%s printed no start trace: %s", s.name, stderr.Bytes())
		}
		s.traces = append(s.traces, t)
	}
}

// peerSandboxes are the other sandboxes /bin/true is timed in, each only
// when installed (scripts/setup.sh installs them under .airlock-ci/npm);
// a missing one is logged with the reason, never skipped silently.
func peerSandboxes(b *testing.B) []*startSubject {
	dir := os.Getenv("AIRLOCK_PEERS")
	if dir == "" {
		dir = filepath.Join("..", ".airlock-ci", "npm", "node_modules")
	}
	var out []*startSubject
	codex := filepath.Join(dir, "@openai", "codex-linux-"+map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH],
		"vendor", map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]+"-unknown-linux-musl", "bin", "codex")
	if st, err := os.Stat(codex); err == nil && st.Mode()&0o111 != 0 {
		// codex-cli 0.171: `codex sandbox [COMMAND]...` runs COMMAND under
		// the Linux sandbox (bubblewrap-based, seccomp, no network).
		out = append(out, &startSubject{name: "codex", argv: []string{codex, "sandbox", "--", "/bin/true"}, env: peerEnv()})
	} else {
		b.Logf("codex: skipped: the native codex binary is not installed (%v); bash scripts/setup.sh installs @openai/codex", err)
	}
	srt := filepath.Join(dir, ".bin", "srt")
	_, errSocat := exec.LookPath("socat")
	_, errRg := exec.LookPath("rg")
	switch _, err := os.Stat(srt); {
	case err != nil:
		b.Logf("srt: skipped: sandbox-runtime is not installed (%v); bash scripts/setup.sh installs @anthropic-ai/sandbox-runtime", err)
	case errSocat != nil || errRg != nil:
		b.Logf("srt: skipped: it needs socat and ripgrep (%v; %v); apt install socat ripgrep", errSocat, errRg)
	default:
		out = append(out, &startSubject{name: "srt", argv: []string{srt, "/bin/true"}, env: peerEnv()})
	}
	return out
}

// peerEnv is what the peers need to find their own parts: node on PATH and
// a home for their settings.
func peerEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
}

// traceOf finds the start trace airlock printed on stderr.
func traceOf(stderr []byte) (starttrace.Trace, bool) {
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), starttrace.Prefix); ok {
			var t starttrace.Trace
			return t, json.Unmarshal([]byte(rest), &t) == nil
		}
	}
	return starttrace.Trace{}, false
}

// nested are the phases timed inside another one: shown, not summed.
var nested = map[string]string{"policy-load": "kernel-build", "audit-open": "kernel-build",
	"audit-fsync": "audit-append", "pin": "plan", "seccomp-compile": "plan", "bwrap-start": "box-run",
	// the box's /etc, one view bound once (sandbox.CacheConfig.EtcViewDir)
	"etc-view": "plan", "etc-view-build": "plan",
	// the allowed decision's fsync, beside the start (audit.Log.AppendDeferred)
	"audit-fsync-background": "audit-append",
	// the decision's and the run's records, written beside the plan and
	// the teardown (audit.Log.AppendAsync)
	"audit-append-background": "audit-append",
	// a box with network: the proxy's ping, beside the plan, and inside the
	// box its exec step's start and its listeners (net_linux.go)
	"egress-ping": "plan", "box-exec-step": "box-run", "box-listen": "box-run",
	// the warm client's hand-over: connecting, the server's answer, the
	// call (everything the server does for it)
	"warm-connect": "warm-handover", "warm-answer": "warm-handover", "warm-call": "warm-handover",
	// the server's run of a warm call: the plan for its fingerprint, the
	// wait for an idle box of it, the box's own call (runner.Pool.Run)
	"warm-plan": "warm-run", "warm-take": "warm-run", "warm-box-call": "warm-run",
	// a warm call with network: the wait for its proxy's ping and its
	// listeners taken for it (inside the box's call), and their release
	// once it is answered (beside the box's clearing)
	"warm-net-wait": "warm-box-call", "warm-net-begin": "warm-box-call", "warm-net-release": "warm-run"}

// breakdown is the median of each phase over the traces, in the order the
// phases ran, and what no phase covers ("other": the mediator's decision,
// the egress proxy's start, the CLI's own work).
func breakdown(ts []starttrace.Trace) string {
	byName := map[string][]float64{}
	var order []string
	first := map[string]float64{}
	var other []float64
	for _, t := range ts {
		covered := 0.0
		for _, p := range t.Phases {
			if _, ok := byName[p.Name]; !ok {
				order = append(order, p.Name)
				first[p.Name] = p.Start
			}
			byName[p.Name] = append(byName[p.Name], p.MS)
			if nested[p.Name] == "" {
				covered += p.MS
			}
		}
		other = append(other, t.Total-covered)
	}
	sort.SliceStable(order, func(i, j int) bool { return first[order[i]] < first[order[j]] })
	var sb strings.Builder
	for _, n := range order {
		indent := ""
		if nested[n] != "" {
			indent = "  "
		}
		fmt.Fprintf(&sb, "start trace:   %-26s %6.2f\n", indent+n, medianF(byName[n]))
	}
	fmt.Fprintf(&sb, "start trace:   %-26s %6.2f\n", "other", medianF(other))
	return sb.String()
}

func medianF(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// withoutEnv is env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
