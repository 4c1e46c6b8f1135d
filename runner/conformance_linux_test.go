package runner

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/egress/wire"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// tierCase is a tier the conformance suite runs, or the reason it cannot.
// net boxes reach a real egress proxy: at tier 1 the box's exec step hands
// the forwarder's listeners to the host (net_linux.go), at tier 2 airlock's
// init runs the forwarder inside.
type tierCase struct {
	tier sandbox.Tier
	net  bool
	skip string
}

// gate stops a test on a tier this host lacks: tiers 1 and 2 are host
// requirements under CI=true (scripts/setup.sh installs runsc), so their
// absence fails there and skips elsewhere.
func (tc tierCase) gate(t testing.TB) {
	t.Helper()
	testsupport.Missing(t, "%s", tc.skip)
}

func (tc tierCase) name() string {
	n := "tier" + strconv.Itoa(int(tc.tier))
	if tc.net {
		n += "+net"
	}
	return n
}

func tiers() []tierCase {
	out := []tierCase{{tier: sandbox.Tier0}}
	r := sandbox.Probe()
	if r.Tier() >= sandbox.Tier1 && os.Geteuid() == 0 {
		out = append(out, tierCase{tier: sandbox.Tier1}, tierCase{tier: sandbox.Tier1, net: true})
	} else {
		out = append(out, tierCase{tier: sandbox.Tier1, skip: "tier 1 unavailable here: " + r.Why})
	}
	switch _, err := sandbox.Resolve(sandbox.Tier2, sandbox.HostFrom(r)); {
	case err != nil:
		out = append(out, tierCase{tier: sandbox.Tier2, skip: "tier 2 unavailable: " + err.Error()})
	case os.Geteuid() != 0:
		out = append(out, tierCase{tier: sandbox.Tier2, skip: "tier 2 is tested as root, like CI"})
	default:
		out = append(out, tierCase{tier: sandbox.Tier2}, tierCase{tier: sandbox.Tier2, net: true})
	}
	return out
}

// boxTiers are the tiers that confine (1 and 2) without network, for the
// rows every box must pass.
func boxTiers() []tierCase {
	var out []tierCase
	for _, tc := range tiers() {
		if tc.tier > sandbox.Tier0 && !tc.net {
			out = append(out, tc)
		}
	}
	return out
}

// boxExe is where the test binary (the attack tool) is as the command sees
// it.
func boxExe(t *testing.T, tier sandbox.Tier) string {
	if tier == sandbox.Tier0 {
		return testExe(t)
	}
	return sandbox.InitPath
}

type outcome struct {
	res    Result
	err    error
	stdout string
	stderr string
}

// runVia runs a request for runIn: Run, or a warm pool's Run for the
// warm shape (TestWarmConformance).
var runVia = Run

func runIn(t *testing.T, tier sandbox.Tier, spec sandbox.Spec, stdin string, argv ...string) outcome {
	t.Helper()
	var o, e bytes.Buffer
	req := Request{Argv: argv, Spec: testSpec(spec), Tier: tier, Stdout: &o, Stderr: &e}
	if stdin != "" {
		req.Stdin = strings.NewReader(stdin)
	}
	res, err := runVia(context.Background(), testExe(t), req)
	return outcome{res, err, o.String(), e.String()}
}

// netOwnServe makes withNet's proxy accept on the box's listeners itself
// (NetSpec.Serve), as the kernel's in-process proxy does: the shape a warm
// box with network takes (TestWarmNetConformance).
var netOwnServe = false

// withNet gives spec a running egress proxy that refuses every
// destination: enough to start the in-box init and its forwarder.
func withNet(t *testing.T, tc tierCase, spec sandbox.Spec) sandbox.Spec {
	t.Helper()
	if !tc.net {
		return spec
	}
	var px *egress.Proxy
	px, spec.Net = netProxy(t)
	if netOwnServe {
		spec.Net.Serve = px.ServeBox
	}
	return spec
}

// netProxy starts an egress proxy that refuses every destination, and
// returns it with the NetSpec that reaches it through its socket.
func netProxy(t testing.TB) (*egress.Proxy, *sandbox.NetSpec) {
	t.Helper()
	token, err := wire.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	px, err := egress.New(egress.Options{Box: "test", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ln, path, dir, err := egress.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	go px.Serve(ln)
	t.Cleanup(func() { px.Close(); ln.Close(); os.RemoveAll(dir) })
	return px, &sandbox.NetSpec{ProxySocket: path, Token: token}
}

func sorted(l []string) []string {
	l = append([]string(nil), l...)
	sort.Strings(l)
	return l
}

func baseSpec(t *testing.T) sandbox.Spec {
	return testSpec(sandbox.Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}})
}

func fixSpec(t *testing.T, wd string) sandbox.Spec {
	return testSpec(sandbox.Spec{Workdir: wd, Write: []string{wd}, Writable: true, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}})
}

// TestConformance runs the rows every tier must pass: how a command is
// started, what it gets and how its end is reported.
func TestConformance(t *testing.T) {
	rows := []struct {
		name  string
		spec  func(t *testing.T) sandbox.Spec
		stdin string
		argv  []string
		check func(t *testing.T, o outcome, spec sandbox.Spec)
	}{
		{"exit status", baseSpec, "", []string{"sh", "-c", "exit 7"}, func(t *testing.T, o outcome, _ sandbox.Spec) {
			if o.err != nil || o.res.ExitCode != 7 {
				t.Errorf("got exit %d, err %v; want 7", o.res.ExitCode, o.err)
			}
		}},
		{"signal", baseSpec, "", []string{"sh", "-c", "kill -TERM $$"}, func(t *testing.T, o outcome, _ sandbox.Spec) {
			if o.err != nil || o.res.ExitCode != 128+15 || o.res.Signal != 15 {
				t.Errorf("got exit %d signal %d, err %v; want 143 and signal 15", o.res.ExitCode, o.res.Signal, o.err)
			}
		}},
		{"wall clock", func(t *testing.T) sandbox.Spec {
			s := baseSpec(t)
			s.Limits.Wall = 300 * time.Millisecond
			return s
		}, "", []string{"sleep", "30"}, func(t *testing.T, o outcome, _ sandbox.Spec) {
			if o.err != nil || o.res.ExitCode != 124 || !o.res.WallTimeout {
				t.Errorf("got exit %d wall %v, err %v; want 124 and WallTimeout", o.res.ExitCode, o.res.WallTimeout, o.err)
			}
		}},
		{"environment built from nothing", baseSpec, "", []string{"env"}, func(t *testing.T, o outcome, spec sandbox.Spec) {
			got := strings.Fields(o.stdout)
			// Nothing but the Spec's, PWD naming the working directory,
			// and with a network the forwarder's settings.
			real, _ := filepath.EvalSymlinks(spec.Workdir)
			want := append(append([]string(nil), spec.Env...), "PWD="+real)
			if spec.Net != nil {
				got = strings.Split(strings.TrimSpace(o.stdout), "\n")
				want = append(want, forward.Env(3128, 1080, sandbox.InitPath, "/run/airlock/bin/airlock-connect")...)
			}
			if o.res.Description.Tier == 2 {
				// Tier-specific: gVisor's loader passes the environment
				// through a map, so only the set is kept, not the order.
				got, want = sorted(got), sorted(want)
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("got environment %q, want exactly %q", got, want)
			}
		}},
		{"working directory", baseSpec, "", []string{"pwd"}, func(t *testing.T, o outcome, spec sandbox.Spec) {
			real, _ := filepath.EvalSymlinks(spec.Workdir)
			if got := strings.TrimSpace(o.stdout); got != real {
				t.Errorf("got working directory %q, want %q", got, real)
			}
		}},
		{"stdin and streams", baseSpec, "hello", []string{"sh", "-c", "cat; echo err >&2"}, func(t *testing.T, o outcome, _ sandbox.Spec) {
			if o.stdout != "hello" || o.stderr != "err\n" {
				t.Errorf("got stdout %q stderr %q, want \"hello\" and \"err\\n\"", o.stdout, o.stderr)
			}
		}},
		{"command not found", baseSpec, "", []string{"no-such-command-airlock"}, func(t *testing.T, o outcome, _ sandbox.Spec) {
			if !errs.Is(o.err, errs.NotFound) || errs.ExitCode(o.err) != errs.ExitCannotRun {
				t.Errorf("got error %v (class %v), want a not-found error that exits 125", o.err, errs.ClassOf(o.err))
			}
		}},
		{"description", baseSpec, "", []string{"true"}, func(t *testing.T, o outcome, _ sandbox.Spec) {
			d := o.res.Description
			if o.err != nil || d.Mechanism == "" || d.Workdir == "" {
				t.Errorf("got description %+v (err %v), want mechanism and workdir", d, o.err)
			}
			if d.Tier == 1 && (!d.Seccomp || len(d.Namespaces) == 0) {
				t.Errorf("tier 1 description %+v lacks seccomp or namespaces", d)
			}
		}},
	}
	for _, tc := range tiers() {
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			for _, row := range rows {
				t.Run(row.name, func(t *testing.T) {
					spec := withNet(t, tc, row.spec(t))
					o := runIn(t, tc.tier, spec, row.stdin, row.argv...)
					row.check(t, o, spec)
				})
			}
		})
	}
}

func TestOutputCap(t *testing.T) {
	for _, tc := range tiers() {
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			var o bytes.Buffer
			res, err := Run(context.Background(), testExe(t), Request{Argv: []string{"head", "-c", "100000", "/dev/zero"},
				Spec: withNet(t, tc, baseSpec(t)), Tier: tc.tier, Stdout: &o, OutputCap: 1000})
			if err != nil || o.Len() != 1000 || !res.Truncated || res.ExitCode != 0 {
				t.Errorf("got %d bytes, truncated %v, exit %d, err %v; want 1000 bytes, truncated, exit 0", o.Len(), res.Truncated, res.ExitCode, err)
			}
		})
	}
}

// attackRow is an escape attempt. It must reach its target at tier 0
// (unconfined), or it is untested on this machine; it must be held at tier 1.
type attackRow struct {
	name string
	// survives marks an attack judged by its mark alone (a process that
	// outlives the run), not by its exit status.
	survives bool
	// everyTier marks a protection the runner gives at every tier, tier 0
	// included: the unconfined run is then a plain exec of the attack, the
	// way a launcher without airlock would start it.
	everyTier bool
	// setup prepares the world and returns the spec, the attack's arguments
	// (after the attack tool) and a check that the attack left no mark on
	// the host (nil when the exit status says all).
	setup func(t *testing.T, exe string) (spec sandbox.Spec, argv []string, clean func() bool)
}

func attacks(t *testing.T) []attackRow {
	return []attackRow{
		{"read a file outside the grants", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			secret := filepath.Join(t.TempDir(), "secret")
			os.WriteFile(secret, []byte("flag"), 0o600)
			return baseSpec(t), []string{exe, attackArg, "read", secret}, nil
		}},
		{"read a file outside through .. from the workdir", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			parent := t.TempDir()
			wd := filepath.Join(parent, "wd")
			os.Mkdir(wd, 0o755)
			os.WriteFile(filepath.Join(parent, "flag"), []byte("flag"), 0o600)
			s := baseSpec(t)
			s.Workdir = wd
			return s, []string{exe, attackArg, "read", "../flag"}, nil
		}},
		{"write outside the grants", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			target := filepath.Join(t.TempDir(), "dropped")
			return baseSpec(t), []string{exe, attackArg, "write", target}, func() bool { _, err := os.Stat(target); return err != nil }
		}},
		{"write the workdir in observe mode", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			s := baseSpec(t)
			target := filepath.Join(s.Workdir, "dropped")
			return s, []string{exe, attackArg, "write", target}, func() bool { _, err := os.Stat(target); return err != nil }
		}},
		{"write an existing git hook in fix mode", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			os.MkdirAll(filepath.Join(wd, ".git", "hooks"), 0o755)
			hook := filepath.Join(wd, ".git", "hooks", "pre-commit")
			os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755)
			return fixSpec(t, wd), []string{exe, attackArg, "write", hook}, func() bool {
				b, _ := os.ReadFile(hook)
				return string(b) == "#!/bin/sh\n"
			}
		}},
		{"write an existing .bashrc in fix mode", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			rc := filepath.Join(wd, ".bashrc")
			os.WriteFile(rc, []byte("# rc\n"), 0o644)
			return fixSpec(t, wd), []string{exe, attackArg, "write", rc}, func() bool {
				b, _ := os.ReadFile(rc)
				return string(b) == "# rc\n"
			}
		}},
		{"create a missing .vscode in fix mode", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			d := filepath.Join(wd, ".vscode")
			return fixSpec(t, wd), []string{exe, attackArg, "mkdir-write", d, "tasks.json"}, func() bool { _, err := os.Lstat(d); return err != nil }
		}},
		{"create a missing .mcp.json in fix mode", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			f := filepath.Join(wd, ".mcp.json")
			return fixSpec(t, wd), []string{exe, attackArg, "write", f}, func() bool { _, err := os.Lstat(f); return err != nil }
		}},
		{"create the default policy file airlock.yaml in fix mode", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			f := filepath.Join(wd, "airlock.yaml")
			return fixSpec(t, wd), []string{exe, attackArg, "write", f}, func() bool { _, err := os.Lstat(f); return err != nil }
		}},
		{"create missing git hooks in an existing .git", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			os.MkdirAll(filepath.Join(wd, ".git"), 0o755)
			d := filepath.Join(wd, ".git", "hooks")
			return fixSpec(t, wd), []string{exe, attackArg, "mkdir-write", d, "pre-commit"}, func() bool { _, err := os.Lstat(d); return err != nil }
		}},
		{"rename .git aside and write its config", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			os.MkdirAll(filepath.Join(wd, ".git", "hooks"), 0o755)
			os.WriteFile(filepath.Join(wd, ".git", "config"), []byte("[core]\n"), 0o644)
			return fixSpec(t, wd), []string{exe, attackArg, "rename-aside", filepath.Join(wd, ".git"), "config"}, func() bool {
				b, _ := os.ReadFile(filepath.Join(wd, ".git", "config"))
				_, err := os.Stat(filepath.Join(wd, ".git.aside"))
				return string(b) == "[core]\n" && err != nil
			}
		}},
		{"create a user namespace", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			return baseSpec(t), []string{exe, attackArg, "userns"}, nil
		}},
		{"reach a canary on the host's loopback", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Write([]byte("canary"))
					c.Close()
				}
			}()
			return baseSpec(t), []string{exe, attackArg, "tcp", ln.Addr().String()}, nil
		}},
		{"read the caller's environment", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			return baseSpec(t), []string{exe, attackArg, "environ", strconv.Itoa(os.Getpid())}, nil
		}},
		{"take over or read the parent", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			return baseSpec(t), []string{exe, attackArg, "parent-mem"}, nil
		}},
		{"open the memory of an unfiltered process in sight", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			return baseSpec(t), []string{exe, attackArg, "procs-mem"}, nil
		}},
		{"use a leaked descriptor", false, true, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			secret := filepath.Join(t.TempDir(), "secret")
			os.WriteFile(secret, []byte("flag"), 0o600)
			// Opened without O_CLOEXEC, as careless callers do.
			fd, err := syscall.Open(secret, syscall.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fd) })
			return baseSpec(t), []string{exe, attackArg, "fd", strconv.Itoa(fd)}, nil
		}},
		{"walk out through an inherited directory descriptor", false, true, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			// Opened without O_CLOEXEC, like the pinned descriptors airlock
			// hands bubblewrap: none may reach the command.
			fd, err := syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fd) })
			return baseSpec(t), []string{exe, attackArg, "dirfd"}, nil
		}},
		{"leave a process running", true, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			secs := fmt.Sprintf("%d.%d", 3000+os.Getpid()%1000, time.Now().UnixNano()%100000)
			t.Cleanup(func() { killMarked(secs) })
			return baseSpec(t), []string{exe, attackArg, "orphan", secs}, func() bool { return waitGone(secs, 3*time.Second) }
		}},
		{"make a set-user-ID file in fix mode", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			f := filepath.Join(wd, "suid")
			return fixSpec(t, wd), []string{exe, attackArg, "setuid", f}, func() bool {
				st, err := os.Stat(f)
				return err != nil || st.Mode()&(os.ModeSetuid|os.ModeSetgid) == 0
			}
		}},
		{"make a device node in fix mode", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			wd := t.TempDir()
			f := filepath.Join(wd, "null")
			return fixSpec(t, wd), []string{exe, attackArg, "mknod", f}, func() bool { _, err := os.Lstat(f); return err != nil }
		}},
		{"write a kernel tunable", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			return baseSpec(t), []string{exe, attackArg, "sysctl"}, nil
		}},
		{"write the sysrq trigger", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			// "h" only prints the help to the kernel log when it does reach.
			return baseSpec(t), []string{exe, attackArg, "sysrq"}, nil
		}},
		{"signal a process of the host", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			pid := hostSleeper(t)
			return baseSpec(t), []string{exe, attackArg, "kill", strconv.Itoa(pid)}, nil
		}},
		{"ptrace a process of the host", false, false, func(t *testing.T, exe string) (sandbox.Spec, []string, func() bool) {
			pid := hostSleeper(t)
			return baseSpec(t), []string{exe, attackArg, "ptrace", strconv.Itoa(pid)}, nil
		}},
	}
}

// TestContainment runs every attack unconfined first (tier 0, where it must
// reach its target or it counts as untested here), then confined, where it
// must be held and leave no mark.
func TestContainment(t *testing.T) {
	if os.Geteuid() != 0 {
		testsupport.Missing(t, "the attack suite runs as root, like CI (several attacks need root to succeed unconfined)")
	}
	for _, row := range attacks(t) {
		t.Run(row.name, func(t *testing.T) {
			var confined []tierCase
			for _, tc := range tiers() {
				if tc.tier > sandbox.Tier0 || row.everyTier {
					confined = append(confined, tc)
				}
			}
			spec, argv, clean := row.setup(t, testExe(t))
			var o outcome
			if row.everyTier {
				o = plainRun(spec, argv)
			} else {
				o = runIn(t, sandbox.Tier0, spec, "", argv...)
			}
			reached := o.err == nil && o.res.ExitCode == 0
			if row.survives {
				reached = reached && !clean()
			}
			if reached {
				t.Logf("unconfined (tier 0, or a plain exec for a protection every tier gives) it reaches its target, as expected: %s", strings.TrimSpace(o.stdout))
			} else {
				t.Skipf("untested on this machine: the attack did not reach its target unconfined either (exit %d, err %v): %s", o.res.ExitCode, o.err, o.stdout)
			}
			for _, tc := range confined {
				t.Run(tc.name(), func(t *testing.T) {
					if tc.skip != "" {
						tc.gate(t)
					}
					spec, argv, clean := row.setup(t, boxExe(t, tc.tier))
					spec = withNet(t, tc, spec)
					o := runIn(t, tc.tier, spec, "", argv...)
					if o.err != nil {
						t.Fatalf("the box did not run: %v", o.err)
					}
					if o.res.ExitCode == 0 && !row.survives {
						t.Errorf("the attack reached its target: %s%s", o.stdout, o.stderr)
					}
					t.Logf("held (exit %d): %s", o.res.ExitCode, firstLine(strings.TrimSpace(o.stdout+o.stderr)))
					if clean != nil && !clean() {
						t.Errorf("the attack left its mark on the host (%s)", strings.TrimSpace(o.stdout))
					}
				})
			}
			_ = clean
		})
	}
}

// plainRun starts the attack as a launcher without airlock would: a plain
// exec with the spec's environment and directory.
func plainRun(spec sandbox.Spec, argv []string) outcome {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = spec.Env, spec.Workdir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
		if code > 0 {
			err = nil
		}
	}
	return outcome{res: Result{ExitCode: code}, err: err, stdout: o.String(), stderr: e.String()}
}

func hostSleeper(t *testing.T) int {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// marked lists host processes whose command line holds marker.
func marked(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(b, []byte(marker)) && pid != os.Getpid() {
			// A zombie has an empty cmdline, so a match is alive.
			out = append(out, pid)
		}
	}
	return out
}

func waitGone(marker string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if len(marked(marker)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func killMarked(marker string) {
	for _, p := range marked(marker) {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// TestReadInsideWriteStaysWritable: a read grant inside a write grant
// takes nothing away in fix mode.
func TestReadInsideWriteStaysWritable(t *testing.T) {
	for _, tc := range boxTiers() {
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			testReadInsideWriteStaysWritable(t, tc.tier)
		})
	}
}

func testReadInsideWriteStaysWritable(t *testing.T, tier sandbox.Tier) {
	wd := t.TempDir()
	os.Mkdir(filepath.Join(wd, "src"), 0o755)
	spec := fixSpec(t, wd)
	spec.Read = []string{filepath.Join(wd, "src")}
	o := runIn(t, tier, spec, "", "sh", "-c", "echo ok > src/out")
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, %s", o.res.ExitCode, o.err, o.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "src", "out")); string(b) != "ok\n" {
		t.Errorf("src/out = %q, want \"ok\\n\"", b)
	}
}

// TestExtraBind: Spec.Binds puts a host file at a box path, read-only.
func TestExtraBind(t *testing.T) {
	for _, tc := range boxTiers() {
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			testExtraBind(t, tc.tier)
		})
	}
}

func testExtraBind(t *testing.T, tier sandbox.Tier) {
	src := filepath.Join(t.TempDir(), "tool.conf")
	os.WriteFile(src, []byte("conf\n"), 0o644)
	spec := fixSpec(t, t.TempDir())
	spec.Binds = []sandbox.Bind{{Src: src, Dst: "/opt/airlock-test/tool.conf"}}
	o := runIn(t, tier, spec, "", "sh", "-c", "cat /opt/airlock-test/tool.conf; echo x >> /opt/airlock-test/tool.conf && echo wrote")
	if o.err != nil || o.stdout != "conf\n" {
		t.Errorf("got %q (err %v), want the file's content and no write", o.stdout, o.err)
	}
	if b, _ := os.ReadFile(src); string(b) != "conf\n" {
		t.Errorf("the host file changed: %q", b)
	}
}

// TestHomeInTmp: a HOME inside the box's private /tmp exists and is
// writable.
func TestHomeInTmp(t *testing.T) {
	for _, tc := range boxTiers() {
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			testHomeInTmp(t, tc.tier)
		})
	}
}

func testHomeInTmp(t *testing.T, tier sandbox.Tier) {
	spec := baseSpec(t)
	spec.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp/home/box"}
	o := runIn(t, tier, spec, "", "sh", "-c", "cd && touch x && pwd")
	if o.err != nil || o.res.ExitCode != 0 || strings.TrimSpace(o.stdout) != "/tmp/home/box" {
		t.Errorf("got %q / %q (exit %d, err %v), want HOME to exist and be writable", o.stdout, o.stderr, o.res.ExitCode, o.err)
	}
}
