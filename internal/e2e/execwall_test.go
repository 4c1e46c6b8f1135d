package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/wire"
	"github.com/airlock-run/airlock/runner"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/landlock"
)

// wallPrograms is the shell.allow of the exec-wall tests.
var wallPrograms = []string{"sh", "ls", "cat", "echo", "cp", "true", "find"}

func requireLandlock(t testing.TB) {
	t.Helper()
	abi, err := landlock.ABI()
	if err != nil || abi < 1 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("needs Landlock (ABI %d, %v)", abi, err)
		}
		t.Skipf("needs Landlock (ABI %d, %v)", abi, err)
	}
}

// proxy starts an egress proxy that refuses every host: enough for a box
// with network, whose exec step hands the forwarder's listeners out.
func proxy(t *testing.T) *sandbox.NetSpec {
	t.Helper()
	token, err := wire.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	px, err := egress.New(egress.Options{Box: "execwall", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ln, path, dir, err := egress.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	go px.Serve(ln)
	t.Cleanup(func() { px.Close(); ln.Close(); os.RemoveAll(dir) })
	return &sandbox.NetSpec{ProxySocket: path, Token: token}
}

// wallRun runs argv in a fix-mode tier-1 box over wd (writable) through the
// runner and the built airlock binary, with the exec wall es (nil: none)
// and, when net, the box shape whose exec step also hands out the
// forwarder's listeners.
func wallRun(t *testing.T, wd string, es *sandbox.ExecSpec, net bool, argv ...string) (runner.Result, string) {
	t.Helper()
	spec := sandbox.Spec{Workdir: wd, Writable: true, Write: []string{wd}, Exec: es,
		Env:    []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/home/airlock"},
		Limits: sandbox.Limits{Wall: time.Minute}}
	if net {
		spec.Net = proxy(t)
	}
	var out, errb bytes.Buffer
	res, err := runner.Run(context.Background(), airlockBin(t), runner.Request{Argv: argv, Spec: spec, Tier: sandbox.Tier1, Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("run %q: %v", argv, err)
	}
	return res, out.String() + errb.String()
}

// TestExecWall: with the same box (mounts, filter, fix mode over the
// working directory), a command that the policy's list does not name
// deletes the victim while there is no wall, and cannot be executed at all
// with it, however the command reaches it; the listed programs still run.
// Both box shapes are tried: bubblewrap starting the command (no network)
// and the exec step that also hands out the forwarder's listeners
// (network).
func TestExecWall(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	requireLandlock(t)
	attacks := []struct {
		name string
		argv []string
	}{
		{"sh -c", []string{"sh", "-c", "rm -f victim"}},
		{"unlisted path", []string{"sh", "-c", "/usr/bin/rm -f victim; /bin/rm -f victim"}},
		{"argv", []string{"rm", "-f", "victim"}},
		{"find -exec", []string{"find", ".", "-name", "victim", "-exec", "rm", "-f", "{}", "+"}},
		{"copy under another name", []string{"sh", "-c", "cp /usr/bin/rm ./x && ./x -f victim"}},
		{"shell on stdin", []string{"sh", "-c", "echo 'rm -f victim' | sh"}},
		{"script file", []string{"sh", "-c", "echo 'rm -f victim' > s; sh s"}},
		{"exec builtin", []string{"sh", "-c", "exec rm -f victim"}},
		{"loader", []string{"sh", "-c", "/lib64/ld-linux-x86-64.so.2 /usr/bin/rm -f victim"}},
		{"loader on stdin", []string{"sh", "-c", "echo '/lib64/ld-linux-x86-64.so.2 /bin/rm -f victim' | sh"}},
	}
	for _, net := range []bool{false, true} {
		shape := "no init (no network)"
		if net {
			shape = "listeners handed out (network)"
		}
		t.Run(shape, func(t *testing.T) {
			for _, a := range attacks {
				t.Run(a.name, func(t *testing.T) {
					wd := t.TempDir()
					victim := filepath.Join(wd, "victim")
					// Without the wall the attack works in this very box.
					os.WriteFile(victim, []byte("v"), 0o644)
					if _, out := wallRun(t, wd, nil, net, a.argv...); exists(victim) {
						t.Fatalf("without the wall the attack did not delete the victim: %s", out)
					}
					os.WriteFile(victim, []byte("v"), 0o644)
					os.Remove(filepath.Join(wd, "x"))
					res, out := wallRun(t, wd, &sandbox.ExecSpec{Programs: wallPrograms}, net, a.argv...)
					if !exists(victim) {
						t.Fatalf("the wall let rm run (exit %d): %s", res.ExitCode, out)
					}
					if res.ExitCode == 0 {
						t.Errorf("exit 0, want a failure: %s", out)
					}
					if !strings.Contains(out, "Permission denied") && !strings.Contains(out, "exec wall") {
						t.Errorf("output %q names no refused execution", out)
					}
				})
			}
			t.Run("listed programs run", func(t *testing.T) {
				wd := t.TempDir()
				os.WriteFile(filepath.Join(wd, "victim"), []byte("v"), 0o644)
				res, out := wallRun(t, wd, &sandbox.ExecSpec{Programs: wallPrograms}, net,
					"sh", "-c", "ls victim && cat victim && /bin/echo . && true && cp victim v2 && find . -name v2 -exec cat {} +")
				if res.ExitCode != 0 || out != "victim\nv.\nv" {
					t.Errorf("got exit %d, %q; want exit 0, %q", res.ExitCode, out, "victim\nv.\nv")
				}
			})
			if net {
				// The in-box binary (the proxy command of git and ssh)
				// runs only for a list that has one of them.
				t.Run("airlock binary", func(t *testing.T) {
					const cmd = "/run/airlock/airlock tokens < /dev/null"
					res, out := wallRun(t, t.TempDir(), &sandbox.ExecSpec{Programs: wallPrograms}, net, "sh", "-c", cmd)
					if res.ExitCode != 126 || !strings.Contains(out, "Permission denied") {
						t.Errorf("without git or ssh listed: exit %d, %q; want Permission denied", res.ExitCode, out)
					}
					res, out = wallRun(t, t.TempDir(), &sandbox.ExecSpec{Programs: append([]string{"git"}, wallPrograms...)}, net, "sh", "-c", cmd)
					if _, small := sandbox.InitBinary(airlockBin(t)); !small {
						if res.ExitCode != 0 {
							t.Errorf("with git listed: exit %d, %q; want it to run", res.ExitCode, out)
						}
						return
					}
					// With airlock-box beside the airlock binary, that is
					// all the box may run: airlock's own modes are not in it.
					if res.ExitCode != 2 || !strings.Contains(out, "airlock-box: this is the code airlock runs inside its boxes") {
						t.Errorf("with git listed: exit %d, %q; want airlock-box to run and refuse the mode", res.ExitCode, out)
					}
				})
			}
			t.Run("written files", func(t *testing.T) {
				// A copy of a listed program and a script the box
				// wrote: refused without run_written, run with it.
				const cmd = "cp /usr/bin/true ./t && ./t && echo copy-ran; cp /usr/bin/true w.sh && echo '#!/bin/sh' > w.sh && echo 'echo script-ran' >> w.sh && ./w.sh"
				wd := t.TempDir()
				res, out := wallRun(t, wd, &sandbox.ExecSpec{Programs: wallPrograms}, net, "sh", "-c", cmd)
				if strings.Contains(out, "ran") || res.ExitCode == 0 {
					t.Errorf("without run_written: exit %d, %q; want both refused", res.ExitCode, out)
				}
				wd = t.TempDir()
				res, out = wallRun(t, wd, &sandbox.ExecSpec{Programs: wallPrograms, RunWritten: true}, net, "sh", "-c", cmd)
				if res.ExitCode != 0 || out != "copy-ran\nscript-ran\n" {
					t.Errorf("with run_written: exit %d, %q; want both to run", res.ExitCode, out)
				}
			})
		})
	}
}

// TestExecWallEndToEnd runs through `airlock run` attacks that get past
// the command reader (an interpreter other than a shell reading code from
// its input or a file; a shell doing so the reader refuses itself): each
// first works unconfined, and under the policy the kernel refuses rm while
// the listed programs run. A policy naming a program that does not exist is
// refused before anything runs.
func TestExecWallEndToEnd(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	requireLandlock(t)
	const policy = "shell: {allow: [sh, perl, ls, cat, echo, cp, \"true\"]}\nfs: {write: [.]}\nescalation: {timeout: 1s}\n"
	const code = `exit(system("sh", "-c", "rm -f victim") >> 8)`
	for name, c := range map[string]string{"stdin": "echo '" + code + "' | perl", "file": "echo '" + code + "' > s; perl s"} {
		t.Run(name, func(t *testing.T) {
			h := newHome(t)
			victim := h.write("victim", "v")
			if runHost(t, h.Work, []string{"sh", "-c", c}); exists(victim) {
				t.Fatal("unconfined the attack did not delete the victim")
			}
			h.write("victim", "v")
			h.write("airlock.yaml", policy)
			r := h.run("run", "--mode", "fix", "--", "sh", "-c", c+"; ls victim")
			if !exists(victim) {
				t.Fatalf("the victim was deleted: %+v", r)
			}
			if r.Code != 0 || !strings.Contains(r.Stderr, "rm: Permission denied") || r.Stdout != "victim\n" {
				t.Errorf("got %+v; want rm refused with Permission denied and ls to run", r)
			}
			// The command itself ends 126: airlock says what that means.
			r = h.run("run", "--mode", "fix", "--", "sh", "-c", c)
			if r.Code != 126 || !strings.Contains(r.Stderr, "the kernel refusing a program the policy does not list") {
				t.Errorf("got %+v; want exit 126 and airlock's note on the exec wall", r)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		h := newHome(t)
		h.write("airlock.yaml", "shell: {allow: [sh, no-such-tool-airlock]}\n")
		r := h.run("run", "--", "sh", "-c", "true")
		if r.Code != 125 || !strings.Contains(r.Stderr, `"no-such-tool-airlock" not found on the box's PATH`) {
			t.Errorf("got %+v; want exit 125 naming the program and the PATH", r)
		}
	})
	// A listed program in a writable directory.
	t.Run("writable", func(t *testing.T) {
		h := newHome(t)
		h.write("tool", "#!/bin/sh\necho tool\n")
		os.Chmod(filepath.Join(h.Work, "tool"), 0o755)
		h.write("airlock.yaml", "shell: {allow: [sh, ./tool]}\nfs: {write: [.]}\n")
		r := h.run("run", "--mode", "fix", "--", "./tool")
		if r.Code != 125 || !strings.Contains(r.Stderr, "run_written") {
			t.Errorf("got %+v; want exit 125 pointing at shell.run_written", r)
		}
		h.write("airlock.yaml", "shell: {allow: [sh, ./tool]}\nfs: {write: [.]}\n")
		if r := h.run("run", "--", "./tool"); r.Code != 0 || r.Stdout != "tool\n" {
			t.Errorf("observe mode (read-only): got %+v; want the listed script to run", r)
		}
	})
}

// BenchmarkExecWall compares `/bin/true` in the box without and with the
// exec wall (shell.allow of seven programs), alternating within one run so
// the host's load weighs on both alike. Without network the wall adds the
// exec step (the airlock binary applying Landlock before executing the
// command); with network it is a few system calls in the init.
func BenchmarkExecWall(b *testing.B) {
	if sandbox.Probe().Tier() < sandbox.Tier1 {
		b.Skip("tier 1 unavailable")
	}
	if abi, _ := landlock.ABI(); abi < 1 {
		b.Skip("no Landlock")
	}
	exe := airlockBin(b)
	wd := b.TempDir()
	spec := sandbox.Spec{Workdir: wd, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	walled := spec
	walled.Exec = &sandbox.ExecSpec{Programs: wallPrograms}
	run := func(s sandbox.Spec) time.Duration {
		start := time.Now()
		res, err := runner.Run(context.Background(), exe, runner.Request{Argv: []string{"/bin/true"}, Spec: s, Tier: sandbox.Tier1})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("run: exit %d, %v", res.ExitCode, err)
		}
		return time.Since(start)
	}
	var plain, wall []time.Duration
	for i := 0; i < b.N; i++ {
		plain = append(plain, run(spec))
		wall = append(wall, run(walled))
	}
	mp, mw := medianOf(plain), medianOf(wall)
	b.ReportMetric(float64(mp.Microseconds())/1000, "plain-ms")
	b.ReportMetric(float64(mw.Microseconds())/1000, "wall-ms")
	b.ReportMetric(float64(mw)/float64(mp), "ratio")
}

func medianOf(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// TestWriteWall: the box's /run is a writable tmpfs that holds only
// airlock's own files. A box with no airlock code inside (no network, no
// exec wall) can write there, as the mounts allow; a box with network or
// an exec wall has the exec step, and with it the Landlock write wall,
// which leaves only the write grants, the temporary directories, HOME, /dev
// and /proc writable.
func TestWriteWall(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	requireLandlock(t)
	const probe = "echo x > /run/planted && cat /run/planted"
	wd := t.TempDir()
	if res, out := wallRun(t, wd, nil, false, "sh", "-c", probe); res.ExitCode != 0 || out != "x\n" {
		t.Fatalf("without the wall: exit %d, %q; want /run writable by the mounts", res.ExitCode, out)
	}
	const allowed = "echo a > ./w && echo b > /tmp/w && echo c > $HOME/w && echo d > /dev/null && mkdir d && mv w d/w && rm -r d && echo ok"
	for _, c := range []struct {
		name string
		es   *sandbox.ExecSpec
		net  bool
	}{
		{"network", nil, true},
		{"exec step", &sandbox.ExecSpec{Programs: []string{"sh", "cat", "echo", "mkdir", "mv", "rm"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, out := wallRun(t, t.TempDir(), c.es, c.net, "sh", "-c", probe)
			if res.ExitCode == 0 || !strings.Contains(out, "Permission denied") {
				t.Errorf("/run under the wall: exit %d, %q; want Permission denied", res.ExitCode, out)
			}
			if res, out := wallRun(t, t.TempDir(), c.es, c.net, "sh", "-c", allowed); res.ExitCode != 0 || out != "ok\n" {
				t.Errorf("granted places under the wall: exit %d, %q; want ok", res.ExitCode, out)
			}
		})
	}
}

// TestScopeSignals: without the walls the box's command may signal the
// box's PID 1 (bubblewrap, in a box with no airlock code); with the exec
// step's walls Landlock's scope refuses it, while the command still
// signals its own children. (Where airlock's init is PID 1 it started the
// command from a thread inside the walls, so the scope does not part them;
// the kernel already ignores every signal sent from inside a namespace to
// its init that the init does not handle, and the init only forwards the
// ones it handles to the command.)
func TestScopeSignals(t *testing.T) {
	requireRoot(t)
	requireBwrap(t)
	requireLandlock(t)
	if abi, _ := landlock.ABI(); abi < 6 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and Landlock ABI %d has no scopes (needs 6)", abi)
		}
		t.Skipf("Landlock ABI %d has no scopes", abi)
	}
	const probe = "kill -0 1 2>/dev/null; echo pid1=$?; sleep 30 & kill $!; wait $! 2>/dev/null; echo child=$?"
	if _, out := wallRun(t, t.TempDir(), nil, false, "sh", "-c", probe); out != "pid1=0\nchild=143\n" {
		t.Fatalf("without the walls: %q; want PID 1 reachable", out)
	}
	es := &sandbox.ExecSpec{Programs: []string{"sh", "sleep"}}
	if _, out := wallRun(t, t.TempDir(), es, false, "sh", "-c", probe); out != "pid1=1\nchild=143\n" {
		t.Errorf("under the walls: %q; want PID 1 refused and the child signalled", out)
	}
}
