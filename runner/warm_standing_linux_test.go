package runner

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// aclOthersRWX is a default ACL (system.posix_acl_default, version 2)
// giving its owner, group and others rwx: set on /tmp, it replaces the
// umask of every file made in /tmp after it.
const aclOthersRWX = `b"\x02\x00\x00\x00" + b"\x01\x00\x07\x00\xff\xff\xff\xff" + b"\x04\x00\x07\x00\xff\xff\xff\xff" + b"\x20\x00\x07\x00\xff\xff\xff\xff"`

// TestWarmStandingAttacks: what a call can change outside the scratch
// directories that the next call in the same box would inherit or find.
// The init is not dumpable, but prlimit, setpriority, sched_setaffinity,
// sched_setscheduler and ioprio_set ask only for the same user, and every
// call is forked from the init: a call that lowers the init's limits or
// priorities shapes every later call. Extended attributes of the scratch
// directories themselves (a default ACL on /tmp) survive emptying them.
// Each row plants in one call and looks in the next; the second call must
// not see the change, in the same box (put back) or in a new one (the box
// was retired).
func TestWarmStandingAttacks(t *testing.T) {
	requireTier1(t)
	// Every thread of the init: the one calls are forked from is among
	// them, whichever it is.
	const initThreads = `for t in /proc/1/task/*; do `
	rows := []struct {
		name, plant, probe string
		clean              func(probe string) bool
	}{
		{"hard file limit of the init",
			`prlimit --pid 1 --nofile=64:64 && echo PLANTED`,
			`ulimit -Hn`, func(p string) bool { return p != "64" }},
		{"soft file limit of the init",
			`prlimit --pid 1 --nofile=64: && echo PLANTED`,
			`ulimit -Sn`, func(p string) bool { return p != "64" }},
		{"core size limit of the init",
			`prlimit --pid 1 --core=4096: 2>/dev/null || prlimit --pid 1 --core=0:0; echo PLANTED; prlimit --pid 1 --core -o SOFT,HARD --noheadings >&2`,
			`ulimit -c; ulimit -Hc`, func(p string) bool { return p == "0\n0" || p == "0\nunlimited" }},
		{"nice value of the init",
			initThreads + `renice -n 10 -p ${t##*/} >/dev/null; done; echo PLANTED`,
			`nice`, func(p string) bool { return p == "0" }},
		{"scheduling policy of the init",
			initThreads + `chrt -i -p 0 ${t##*/}; done; echo PLANTED`,
			`chrt -p $$ | grep -c SCHED_IDLE || true`, func(p string) bool { return p == "0" }},
		{"I/O priority of the init",
			initThreads + `ionice -c 3 -p ${t##*/}; done; echo PLANTED`,
			`ionice -p $$`, func(p string) bool { return p != "idle" }},
		{"CPU affinity of the init",
			`[ "$(nproc)" -gt 1 ] || { echo ONE_CPU; exit 0; }; ` + initThreads + `taskset -p 1 ${t##*/} >/dev/null; done; echo PLANTED`,
			`taskset -p $$ | sed 's/.*: //'`, func(p string) bool { return p != "1" }},
		{"user xattr on /tmp",
			`python3 -c 'import os; os.setxattr("/tmp", "user.left", b"1")' && echo PLANTED`,
			`python3 -c 'import os; print(len(os.listxattr("/tmp")))'`, func(p string) bool { return p == "0" }},
		{"user xattr on HOME",
			`python3 -c 'import os; os.setxattr(os.environ["HOME"], "user.left", b"1")' && echo PLANTED`,
			`python3 -c 'import os; print(len(os.listxattr(os.environ["HOME"])))'`, func(p string) bool { return p == "0" }},
		{"default ACL on /tmp",
			`python3 -c 'import os; os.setxattr("/tmp", "system.posix_acl_default", ` + aclOthersRWX + `)' && echo PLANTED`,
			`umask 022; echo x >/tmp/f; stat -c %a /tmp/f`, func(p string) bool { return p == "644" }},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			p := warmPool(t)
			spec := baseSpec(t)
			o := mustWarm(t, p, spec, "sh", "-c", row.plant)
			if strings.Contains(o.stdout, "ONE_CPU") {
				t.Skip("one CPU: no other affinity to set")
			}
			if !strings.Contains(o.stdout, "PLANTED") {
				t.Fatalf("the first call could not plant (stdout %q, stderr %q), so this row shows nothing", o.stdout, o.stderr)
			}
			first := o.res.Description.Notes
			o = mustWarm(t, p, spec, "sh", "-c", row.probe)
			t.Logf("after the first call: %s; the second: %s", first[len(first)-1], o.res.Description.Notes[len(o.res.Description.Notes)-1])
			got := strings.TrimSpace(o.stdout)
			if !row.clean(got) {
				t.Errorf("the next call found what the first left: %q (notes %q)", got, o.res.Description.Notes)
			}
		})
	}
}

// mqOpen is a Python program opening the POSIX message queue named by its
// first argument with the flags of its second ("create" or "open"), and
// printing the descriptor or the errno.
const mqOpen = `
import ctypes, os, sys
rt = ctypes.CDLL("libc.so.6", use_errno=True)
flags = os.O_RDONLY | (os.O_CREAT if sys.argv[2] == "create" else 0)
q = rt.mq_open(sys.argv[1].encode(), flags, 0o600, None)
print("fd" if q >= 0 else "errno=%d" % ctypes.get_errno())
`

// TestWarmMessageQueues: a POSIX message queue lives in the box's IPC
// namespace until it is unlinked, whoever made it has ended: its name (and
// its attributes, and with the right to write, its messages) would carry
// one call's data to the next. Landlock refuses opening a queue for
// writing, not making one read-only. Unconfined first: in a plain
// bubblewrap box with an IPC namespace of its own, a queue made by one
// process is opened by the next.
func TestWarmMessageQueues(t *testing.T) {
	requireTier1(t)
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		testsupport.Missing(t, "no bwrap on PATH")
	}
	plain := exec.Command(bw, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "sh", "-c",
		`python3 -c "$0" /left create && python3 -c "$0" /left open`, mqOpen)
	out, err := plain.CombinedOutput()
	if err != nil || strings.Count(string(out), "fd") != 2 {
		t.Fatalf("unconfined, a queue did not outlive its maker (%v, %q), so this test shows nothing", err, out)
	}

	p := warmPool(t)
	spec := baseSpec(t)
	o := mustWarm(t, p, spec, "python3", "-c", mqOpen, "/left-by-first", "create")
	if strings.TrimSpace(o.stdout) != "fd" {
		t.Fatalf("the first call could not make a queue (%q, %q), so this test shows nothing", o.stdout, o.stderr)
	}
	o = mustWarm(t, p, spec, "python3", "-c", mqOpen, "/left-by-first", "open")
	if got := strings.TrimSpace(o.stdout); got != "errno=2" {
		t.Errorf("the next call opened the first call's queue: %q (notes %q)", got, o.res.Description.Notes)
	}
	if !strings.Contains(o.res.Description.Notes[len(o.res.Description.Notes)-1], "call 2") {
		t.Errorf("the second call did not run in the first call's box (notes %q), so this test shows nothing", o.res.Description.Notes)
	}
}

// TestWarmRootReadOnly: nothing of the box's root (bubblewrap's tmpfs,
// holding the mount points) is brought back between calls, so a call must
// not be able to write it whatever the kernel: read-only as a mount, not
// only behind Landlock's write wall (which a kernel before 5.13 lacks, and
// with it a call's `mkdir /left` would be there for the next call).
func TestWarmRootReadOnly(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	o := mustWarm(t, p, spec, "sh", "-c", `awk '$2 == "/" { split($4, o, ","); print o[1] }' /proc/self/mounts | tail -1`)
	if got := strings.TrimSpace(o.stdout); got != "ro" {
		t.Errorf("a warm box's root is mounted %q, not read-only", got)
	}
	o = mustWarm(t, p, spec, "sh", "-c", `echo x >/tmp/f && cat /tmp/f && echo x >$HOME/f && ls -d /dev/mqueue`)
	if !strings.Contains(o.stdout, "/dev/mqueue") {
		t.Errorf("a warm box's scratch directories are not all there and writable: %q %q", o.stdout, o.stderr)
	}
}

// connectProbe is a Python program connecting to the Unix socket named by
// its argument and printing what it reads, or the error.
const connectProbe = `
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("read:" + s.recv(64).decode().strip())
except OSError as e:
    print("refused:%s" % e.strerror)
`

// serveSocket listens on path and answers every connection with word.
func serveSocket(t *testing.T, path, word string) net.Listener {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(word + "\n"))
			c.Close()
		}
	}()
	return l
}

// TestWarmSocketCoverReplaced: a host socket in a granted tree is covered
// in the box with a bind of /dev/null onto its path. When the host
// process that owns it restarts (unlinks it and binds the same path
// again), the kernel detaches the cover in every mount namespace; a fresh
// box covers the new socket, but the next call's plan names the same path
// and so the same options: unless the socket itself is in the
// fingerprint, the call runs in the old box, whose cover is gone, and
// reaches the host process.
func TestWarmSocketCoverReplaced(t *testing.T) {
	requireTier1(t)
	wd := t.TempDir()
	sock := filepath.Join(wd, "agent.sock")
	l := serveSocket(t, sock, "host-secret")
	p := warmPool(t)
	spec := baseSpec(t)
	spec.Workdir = wd
	o := mustWarm(t, p, spec, "python3", "-c", connectProbe, sock)
	if !strings.HasPrefix(strings.TrimSpace(o.stdout), "refused:") {
		t.Fatalf("the first call reached the host socket (%q): it is not covered, so this test shows nothing", o.stdout)
	}
	l.Close() // unlinks the socket, as a restarting daemon does
	l = serveSocket(t, sock, "host-secret")
	defer l.Close()
	o = mustWarm(t, p, spec, "python3", "-c", connectProbe, sock)
	if got := strings.TrimSpace(o.stdout); !strings.HasPrefix(got, "refused:") {
		t.Errorf("the next call reached the host socket a restart put at the covered path: %q (notes %q)", got, o.res.Description.Notes)
	}
}

// timeWait is a Python program that, with "plant", leaves a loopback TCP
// port in TIME_WAIT (the side that closes first keeps it for a minute,
// whoever made it has ended), and with "probe" says whether that port can
// be bound: one call's ports would signal to the next.
const timeWait = `
import socket, sys
port = 47321
if sys.argv[1] == "plant":
    l = socket.socket(); l.bind(("127.0.0.1", port)); l.listen(1)
    c = socket.create_connection(("127.0.0.1", port)); a, _ = l.accept()
    a.close(); c.recv(1); c.close(); l.close(); print("PLANTED")
else:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port)); print("free")
    except OSError as e:
        print("taken:%s" % e.strerror)
`

// TestWarmTCPTimeWait: the box's network namespace lives as long as the
// box, and a TCP connection's TIME_WAIT outlives every process: the next
// call would find the port taken. A box with TCP state left after a call
// is retired.
func TestWarmTCPTimeWait(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	o := mustWarm(t, p, spec, "python3", "-c", timeWait, "plant")
	if !strings.Contains(o.stdout, "PLANTED") {
		t.Fatalf("the first call could not leave a TIME_WAIT (%q, %q), so this test shows nothing", o.stdout, o.stderr)
	}
	o = mustWarm(t, p, spec, "python3", "-c", timeWait, "probe")
	if got := strings.TrimSpace(o.stdout); got != "free" {
		t.Errorf("the next call found the first call's port: %q (notes %q)", got, o.res.Description.Notes)
	}
}
