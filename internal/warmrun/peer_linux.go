package warmrun

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// peer is the process on the other end of a connection, as the kernel
// names it: never what the process says of itself.
type peer struct {
	uid, pid int
	// pidfd pins the process: after its /proc entries are read, a signal 0
	// through it proves the pid still names the same process.
	pidfd int
}

// peerOf asks the kernel who connected: SO_PEERCRED and SO_PEERPIDFD, both
// taken at connect time.
func peerOf(c *net.UnixConn, wantPidfd bool) (peer, error) {
	p := peer{pidfd: -1}
	raw, err := c.SyscallConn()
	if err != nil {
		return p, err
	}
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		if cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); cerr != nil {
			return
		}
		p.uid, p.pid = int(cred.Uid), int(cred.Pid)
		if wantPidfd {
			p.pidfd, cerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD)
			if cerr == nil {
				unix.CloseOnExec(p.pidfd)
			} else {
				p.pidfd = -1
			}
		}
	}); err != nil {
		return p, err
	}
	if cerr != nil {
		return p, cerr
	}
	if p.pid <= 0 {
		return p, fmt.Errorf("the kernel names no peer process")
	}
	return p, nil
}

func (p peer) close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
}

// alive reports whether the pidfd's process is still there, so what was
// read under /proc/<pid> was read of it and not of a process that took its
// pid afterwards.
func (p peer) alive() error {
	if p.pidfd < 0 {
		return fmt.Errorf("no pidfd for the peer")
	}
	if err := unix.PidfdSendSignal(p.pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("the peer process ended while it was checked: %v", err)
	}
	return nil
}

// proc is "/proc/<pid>", or "/proc/self" for 0.
func proc(pid int) string {
	if pid == 0 {
		return "/proc/self"
	}
	return "/proc/" + strconv.Itoa(pid)
}

// sameNamespaces reports the first of names in which process pid lives in
// a namespace other than this process's, "" when none; an entry that cannot
// be read counts as different.
func sameNamespaces(pid int, names ...string) string {
	d, derr := openProc(pid)
	defer d.close()
	for _, ns := range names {
		if derr != nil {
			return ns
		}
		mine, err := selfNS(ns)
		if err != nil {
			return ns
		}
		theirs, err := d.nsID(ns)
		if err != nil || theirs != mine {
			return ns
		}
	}
	return ""
}

// facts are what makes a cold run of a process behave as it does besides
// what it says (its arguments, environment and working directory): who it
// is, where it lives, what it may do. A call runs warm only when the
// client's equal the server's, each read from the kernel.
type facts struct {
	// exe is the airlock binary: its path and device and inode (a rebuilt
	// one is another file).
	exe string
	// root is the process's root directory as this process names it,
	// with its device and inode: a caller chroot'd elsewhere (in the same
	// namespaces) names its paths, its policy and programs included, in
	// another tree than the server would read them in.
	root string
	// lsm is the process's security label (AppArmor's profile,
	// SELinux's context; /proc/<pid>/attr/current), "" with no such module.
	lsm string
	// status holds the lines of /proc/<pid>/status that name the process's
	// rights and confinement.
	status map[string]string
	// ns are the namespaces' identities, cgroup the cgroup file, limits
	// every resource limit.
	ns     map[string]string
	cgroup string
	limits [unix.RLIMIT_RTTIME + 1]unix.Rlimit
	// sched, ioprio and oomAdj are what else a box inherits from the
	// process that starts it: the scheduling policy, nice value, priority
	// and clamps, the I/O priority, the OOM score adjustment.
	sched  unix.SchedAttr
	ioprio int
	oomAdj string
	// sigBlk is the signal mask a box inherits (sigMask).
	sigBlk uint64
	// persona is the execution domain and its flags (personality(2):
	// setarch -R turns address space randomization off for every process
	// started under it, a box's too); personaHidden when the kernel does
	// not show it to this process (Yama's ptrace scope).
	persona string
}

// personaHidden stands for a personality the server may not read, and
// linuxPersona for the default one (PER_LINUX, no flags).
const (
	personaHidden = "hidden"
	linuxPersona  = "00000000"
)

// statusKeys are the lines of /proc/<pid>/status compared: ids and groups,
// the umask, every capability set, and the confinement a sandbox the client
// is in may have set (no_new_privs, which Landlock needs, and seccomp), and
// its tracer (a ptrace sandbox sees and refuses the calls of the client, not
// those of the server's box), and the signals it ignores (SigIgn, process-
// wide: nohup's SIGHUP, which the Go runtime keeps ignored and a box's
// command inherits).
var statusKeys = []string{"Uid", "Gid", "Groups", "Umask", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
	"NoNewPrivs", "Seccomp", "Seccomp_filters", "TracerPid", "Cpus_allowed", "Mems_allowed", "SigIgn"}

// namespaceNames are every namespace a process has.
var namespaceNames = []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time"}

// readFacts reads process pid's facts (0: this process's).
func readFacts(pid int) (facts, error) {
	// Every entry through one open directory of the process; a pid
	// reused meanwhile fails the reads (and the pidfd check after).
	d, err := openProc(pid)
	if err != nil {
		return facts{}, err
	}
	defer d.close()
	return factsOf(d, pid)
}

// caller is what the server reads of a caller: its facts, compared with
// the server's, and its working directory (device and inode) and
// controlling terminal (0 for none), compared with what its request says.
type caller struct {
	facts
	cwd  unix.Stat_t
	ctty uint64
}

// readCaller reads process pid's facts, working directory and terminal,
// all through one open directory of the process.
func readCaller(pid int) (caller, error) {
	var c caller
	d, err := openProc(pid)
	if err != nil {
		return c, err
	}
	defer d.close()
	if c.facts, err = factsOf(d, pid); err != nil {
		return c, err
	}
	if c.cwd, err = d.stat("cwd"); err != nil {
		return c, fmt.Errorf("the peer's working directory: %v", err)
	}
	st, err := d.read("stat")
	if err != nil {
		return c, err
	}
	if c.ctty, err = cttyOf(d.name, st); err != nil {
		return c, err
	}
	return c, nil
}

// factsOf reads the facts of process pid, whose /proc directory is d.
func factsOf(d procDir, pid int) (facts, error) {
	f := facts{status: map[string]string{}, ns: map[string]string{}}
	dir := d.name
	var err error
	if f.exe, err = linkID(d, "exe"); err != nil {
		return f, err
	}
	if f.root, err = linkID(d, "root"); err != nil {
		return f, err
	}
	if f.lsm, err = lsmLabel(d); err != nil {
		return f, err
	}
	st, err := d.read("status")
	if err != nil {
		return f, err
	}
	parseStatus(st, f.status)
	for _, k := range statusKeys {
		if _, ok := f.status[k]; !ok {
			return f, fmt.Errorf("%s/status has no %s line", dir, k)
		}
	}
	for _, ns := range namespaceNames {
		// This process's own are read once (selfNS): no other process
		// can change them.
		if pid == 0 {
			f.ns[ns], err = selfNS(ns)
		} else {
			f.ns[ns], err = d.nsID(ns)
		}
		if err != nil {
			return f, err
		}
	}
	cg, err := d.read("cgroup")
	if err != nil {
		return f, err
	}
	f.cgroup = string(cg)
	for r := range f.limits {
		if err := unix.Prlimit(pid, r, nil, &f.limits[r]); err != nil {
			return f, fmt.Errorf("prlimit %d: %v", r, err)
		}
	}
	a, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		return f, fmt.Errorf("sched_getattr: %v", err)
	}
	f.sched = unix.SchedAttr{Policy: a.Policy, Nice: a.Nice, Priority: a.Priority, Util_min: a.Util_min, Util_max: a.Util_max}
	prio, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(pid), 0)
	if e != 0 {
		return f, fmt.Errorf("ioprio_get: %v", e)
	}
	f.ioprio = int(prio)
	oom, err := d.read("oom_score_adj")
	if err != nil {
		return f, err
	}
	f.oomAdj = string(bytes.TrimSpace(oom))
	if f.persona, err = persona(d); err != nil {
		return f, err
	}
	if pid == 0 {
		f.sigBlk, err = selfSigMask()
	} else {
		f.sigBlk, err = sigMask(d)
	}
	if err != nil {
		return f, err
	}
	return f, nil
}

// persona is process d's personality, personaHidden when reading it is
// refused (it takes the right to trace the process).
func persona(d procDir) (string, error) {
	b, err := d.read("personality")
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return personaHidden, nil
	}
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(b)), nil
}

// selfSigMask is this process's start mask (sigMask), read once: it never
// changes, and reading every thread's status costs as much as the rest of
// a process's facts.
var selfSigMask = sync.OnceValues(func() (uint64, error) {
	d, err := openProc(0)
	if err != nil {
		return 0, err
	}
	defer d.close()
	return sigMask(d)
})

// sigMask is the signal mask process d starts its children with: the Go
// runtime gives each one the mask the process itself started with, which
// is in no /proc file. Every thread runs with that mask save the signals
// the runtime must get (the same in any airlock binary) and, for a moment,
// all of them (a thread being made, a fork); what every thread blocks is
// that start mask, however the threads stand when read.
func sigMask(d procDir) (uint64, error) {
	fd, err := unix.Openat(d.fd, "task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s/task: %v", d.name, err)
	}
	dir := os.NewFile(uintptr(fd), d.name+"/task")
	defer dir.Close()
	tids, err := dir.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("read %s/task: %v", d.name, err)
	}
	tasks := procDir{fd: fd, name: d.name + "/task"}
	mask, read := ^uint64(0), 0
	for _, tid := range tids {
		st, err := tasks.read(tid + "/status")
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			continue // a thread that ended meanwhile
		}
		if err != nil {
			return 0, err
		}
		m, err := statusMask(st, "SigBlk")
		if err != nil {
			return 0, fmt.Errorf("%s/%s/status: %v", tasks.name, tid, err)
		}
		mask &= m
		read++
	}
	if read == 0 {
		return 0, fmt.Errorf("%s: no thread", tasks.name)
	}
	return mask, nil
}

// statusMask is the hexadecimal mask of the status line key.
func statusMask(st []byte, key string) (uint64, error) {
	_, rest, ok := bytes.Cut(st, []byte("\n"+key+":"))
	if !ok {
		return 0, fmt.Errorf("no %s line", key)
	}
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		rest = rest[:i]
	}
	return strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
}

// lsmLabel is the security label of the process d is; with no module to
// give one (EINVAL), "".
func lsmLabel(d procDir) (string, error) {
	b, err := d.read("attr/current")
	if errors.Is(err, unix.EINVAL) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b, "\x00\n")), nil
}

// ioprioWhoProcess is IOPRIO_WHO_PROCESS.
const ioprioWhoProcess = 1

// linkID is the path a /proc/<pid> link entry (exe, root) names with the
// device and inode of the file it opens.
func linkID(d procDir, entry string) (string, error) {
	path, err := d.readlink(entry)
	if err != nil {
		return "", err
	}
	st, err := d.stat(entry)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (%d:%d)", path, st.Dev, st.Ino), nil
}

// parseStatus puts the lines of a status file named in statusKeys into m
// (the rest are not compared, so not kept).
func parseStatus(st []byte, m map[string]string) {
	for len(st) > 0 {
		line := st
		if i := bytes.IndexByte(st, '\n'); i >= 0 {
			line, st = st[:i], st[i+1:]
		} else {
			st = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		if key, kept := statusKey(k); kept {
			m[key] = string(bytes.TrimSpace(v))
		}
	}
}

// statusKey is k as one of statusKeys, false when it is none of them.
func statusKey(k []byte) (string, bool) {
	for _, s := range statusKeys {
		if string(k) == s {
			return s, true
		}
	}
	return "", false
}

// limitNames name the resource limits in a reason.
var limitNames = [...]string{"cpu", "fsize", "data", "stack", "core", "rss", "nproc", "nofile", "memlock", "as",
	"locks", "sigpending", "msgqueue", "nice", "rtprio", "rttime"}

// differ is the first way in which theirs is not mine, as a reason; "" when
// they are alike.
// Names in skip are left out: only tests name any, to show what each
// comparison refuses.
func (mine facts) differ(theirs facts, skip map[string]bool) string {
	if theirs.exe != mine.exe && !skip["exe"] {
		return fmt.Sprintf("another airlock binary (%s; the server runs %s; restart airlock warm after a rebuild)", theirs.exe, mine.exe)
	}
	if theirs.root != mine.root && !skip["root"] {
		return fmt.Sprintf("another root directory (%s; the server's is %s)", theirs.root, mine.root)
	}
	if theirs.lsm != mine.lsm && !skip["lsm"] {
		return fmt.Sprintf("another security label (%q; the server's is %q)", theirs.lsm, mine.lsm)
	}
	for _, k := range statusKeys {
		if theirs.status[k] != mine.status[k] && !skip[k] {
			return fmt.Sprintf("another %s (%s; the server's is %s)", k, theirs.status[k], mine.status[k])
		}
	}
	for _, ns := range namespaceNames {
		switch {
		case theirs.ns[ns] == mine.ns[ns] || skip[ns]:
		case ns == "mnt":
			return "another mnt namespace (the paths it names are not the server's)"
		default:
			return fmt.Sprintf("another %s namespace", ns)
		}
	}
	if theirs.cgroup != mine.cgroup && !skip["cgroup"] {
		return "another cgroup (start airlock warm from the session whose runs it serves)"
	}
	for r := range mine.limits {
		if theirs.limits[r] != mine.limits[r] && !skip[limitNames[r]] {
			return fmt.Sprintf("another %s limit (%d:%d; the server's is %d:%d)", limitNames[r],
				theirs.limits[r].Cur, theirs.limits[r].Max, mine.limits[r].Cur, mine.limits[r].Max)
		}
	}
	switch {
	case theirs.sched != mine.sched && !skip["sched"]:
		return fmt.Sprintf("another scheduling policy or nice value (%+v; the server's is %+v)", theirs.sched, mine.sched)
	case theirs.ioprio != mine.ioprio && !skip["ioprio"]:
		return fmt.Sprintf("another I/O priority (%#x; the server's is %#x)", theirs.ioprio, mine.ioprio)
	case theirs.oomAdj != mine.oomAdj && !skip["oom"]:
		return fmt.Sprintf("another oom_score_adj (%s; the server's is %s)", theirs.oomAdj, mine.oomAdj)
	case theirs.persona != mine.persona && !skip["personality"] && (theirs.persona != personaHidden || mine.persona != linuxPersona):
		// A hidden one is taken for the default: a caller's flags
		// (setarch) then go unseen, but a server's own never weaken a
		// caller's box.
		return fmt.Sprintf("another personality (%s; the server's is %s)", theirs.persona, mine.persona)
	case theirs.sigBlk != mine.sigBlk && !skip["SigBlk"]:
		return fmt.Sprintf("another signal mask (blocked %016x; the server's %016x)", theirs.sigBlk, mine.sigBlk)
	}
	return ""
}

// sameDir reports whether the peer's working directory cwd (the kernel's
// /proc/<pid>/cwd) and dir are one directory (device and inode).
func sameDir(cwd unix.Stat_t, dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("working directory %s: %v", dir, err)
	}
	if cwd.Dev != st.Dev || cwd.Ino != st.Ino {
		return fmt.Errorf("working directory %s is not the one the client works in", dir)
	}
	return nil
}

// cttyOf is the device of the controlling terminal named in stat, the
// text of a /proc/<pid>/stat named name; 0 for none (the seventh field,
// after the command name, which may hold spaces and parentheses).
func cttyOf(name string, stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s/stat: no command name", name)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 5 {
		return 0, fmt.Errorf("%s/stat: too few fields", name)
	}
	n, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/stat: tty_nr: %v", name, err)
	}
	return uint64(uint32(n)), nil
}
