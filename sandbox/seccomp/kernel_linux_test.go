//go:build linux

package seccomp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/testsupport"
)

// childEnv selects the test binary's child mode: the test re-executes itself
// so the filter is loaded into a process of its own (it cannot be removed).
const childEnv = "AIRLOCK_SECCOMP_TEST_CHILD"

// childReq is what the parent asks of a child.
type childReq struct {
	Filter bool     // install the filter first
	Bench  int      // make this many getppid calls and report the time per call
	Ptrace bool     // Options.Ptrace
	SetGID bool     // Options.SetGID
	Probes []string // names; empty: every probe except Kill ones
	Exec   string   // a program to start after the probes, to show exec works
}

// childOut is what a child prints on stdout.
type childOut struct {
	NsPerCall float64
	Errno     map[string]int
	ExecErr   string
	Exit      int
}

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(childMain(v))
	}
	os.Exit(m.Run())
}

func childMain(spec string) int {
	var req childReq
	if err := json.Unmarshal([]byte(spec), &req); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		return 3
	}
	opts := Options{Ptrace: req.Ptrace, SetGID: req.SetGID}
	if req.Filter {
		if err := Install(opts); err != nil {
			fmt.Fprintln(os.Stderr, "install:", err)
			return 4
		}
	}
	out := childOut{Errno: map[string]int{}}
	if req.Bench > 0 {
		start := time.Now()
		for i := 0; i < req.Bench; i++ {
			unix.Getppid()
		}
		out.NsPerCall = float64(time.Since(start).Nanoseconds()) / float64(req.Bench)
	}
	want := map[string]bool{}
	for _, n := range req.Probes {
		want[n] = true
	}
	for _, p := range Probes(opts) {
		if req.Bench > 0 {
			break
		}
		if (len(want) == 0 && p.Want == Kill) || (len(want) > 0 && !want[p.Name]) {
			continue
		}
		out.Errno[p.Name] = int(p.Call())
	}
	if req.Exec != "" {
		proc, err := os.StartProcess(req.Exec, []string{req.Exec, "-c", "exit 7"}, &os.ProcAttr{})
		if err == nil {
			var st *os.ProcessState
			st, err = proc.Wait()
			if err == nil {
				out.Exit = st.ExitCode()
			}
		}
		if err != nil {
			out.ExecErr = err.Error()
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

// runChild runs the test binary in child mode and returns its answer, or the
// signal that ended it.
func runChild(t testing.TB, req childReq) (childOut, syscall.Signal) {
	t.Helper()
	spec, _ := json.Marshal(req)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := os.StartProcess(exe, []string{exe, "-test.run=^$"}, &os.ProcAttr{
		Env:   []string{childEnv + "=" + string(spec)},
		Files: []*os.File{nil, w, os.Stderr},
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out childOut
	dec := json.NewDecoder(r)
	decErr := dec.Decode(&out)
	st, err := proc.Wait()
	if err != nil {
		t.Fatal(err)
	}
	ws := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return out, ws.Signal()
	}
	if ws.ExitStatus() != 0 || decErr != nil {
		t.Fatalf("child %s: %v (decode: %v)", spec, st, decErr)
	}
	return out, 0
}

func errnoName(e int) string {
	if e == 0 {
		return "success"
	}
	return unix.ErrnoName(unix.Errno(e))
}

func requireSeccomp(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no syscall table for %s", runtime.GOARCH)
	}
	testsupport.Require(t, testsupport.Proc)
	b, _ := os.ReadFile("/proc/self/status")
	if !strings.Contains(string(b), "Seccomp:") {
		testsupport.Missing(t, "kernel without seccomp")
	}
}

// TestKernel loads the filter into a child and makes every probe there; a
// second child without the filter is the control. A probe is only counted as
// stopped by the filter when the control got a different answer.
func TestKernel(t *testing.T) {
	requireSeccomp(t)
	for _, opts := range []Options{{}, {Ptrace: true}, {SetGID: true}} {
		t.Run(fmt.Sprintf("ptrace=%v,setgid=%v", opts.Ptrace, opts.SetGID), func(t *testing.T) {
			control, sig := runChild(t, childReq{Ptrace: opts.Ptrace, SetGID: opts.SetGID})
			if sig != 0 {
				t.Fatalf("control child killed by %v", sig)
			}
			filtered, sig := runChild(t, childReq{Filter: true, Ptrace: opts.Ptrace, SetGID: opts.SetGID, Exec: "/bin/sh"})
			if sig != 0 {
				t.Fatalf("filtered child killed by %v", sig)
			}
			if filtered.ExecErr != "" || filtered.Exit != 7 {
				t.Errorf("exec under the filter: got exit %d, error %q; want exit 7", filtered.Exit, filtered.ExecErr)
			}
			for _, p := range Probes(opts) {
				if p.Want == Kill {
					continue
				}
				t.Run(p.Name, func(t *testing.T) {
					c, f := control.Errno[p.Name], filtered.Errno[p.Name]
					t.Logf("without the filter: %s; with it: %s", errnoName(c), errnoName(f))
					switch {
					case p.Want == Allow && f != c:
						t.Errorf("allowed call: got %s under the filter, want %s as without it", errnoName(f), errnoName(c))
					case p.Want == Allow:
					case !p.Held(unix.Errno(f)):
						t.Errorf("got %s under the filter, want the filter's %s (without it: %s)", errnoName(f), p.Want, errnoName(c))
					case p.Held(unix.Errno(c)):
						t.Skipf("untested here: the kernel answers %s without the filter too", errnoName(c))
					}
				})
			}
		})
	}
}

// TestKernelKill shows that the filter's kill rules end the process.
func TestKernelKill(t *testing.T) {
	requireSeccomp(t)
	n := 0
	for _, p := range Probes(Options{}) {
		if p.Want != Kill {
			continue
		}
		n++
		t.Run(p.Name, func(t *testing.T) {
			if _, sig := runChild(t, childReq{Probes: []string{p.Name}}); sig != 0 {
				t.Fatalf("control: killed by %v without the filter", sig)
			}
			if _, sig := runChild(t, childReq{Filter: true, Probes: []string{p.Name}}); sig != syscall.SIGSYS {
				t.Errorf("got signal %v, want SIGSYS", sig)
			}
		})
	}
	if n == 0 {
		t.Skipf("no kill probe on %s (foreign-architecture calls are covered in the interpreter)", runtime.GOARCH)
	}
}

// TestTableMatchesUnix checks the running architecture's column of the
// syscall table, and the ABI constants, against golang.org/x/sys/unix.
func TestTableMatchesUnix(t *testing.T) {
	want := map[string]int{}
	for _, s := range sysnums() {
		want[s] = -1
	}
	got := map[string]int{
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
		"io_uring_register": unix.SYS_IO_URING_REGISTER, "bpf": unix.SYS_BPF, "keyctl": unix.SYS_KEYCTL,
		"add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY, "ptrace": unix.SYS_PTRACE,
		"process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"pidfd_getfd": unix.SYS_PIDFD_GETFD, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
		"userfaultfd": unix.SYS_USERFAULTFD, "mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2,
		"pivot_root": unix.SYS_PIVOT_ROOT, "open_tree": unix.SYS_OPEN_TREE, "move_mount": unix.SYS_MOVE_MOUNT,
		"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT,
		"fspick": unix.SYS_FSPICK, "mount_setattr": unix.SYS_MOUNT_SETATTR, "open_tree_attr": unix.SYS_OPEN_TREE_ATTR,
		"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE,
		"delete_module": unix.SYS_DELETE_MODULE, "kexec_load": unix.SYS_KEXEC_LOAD,
		"kexec_file_load": unix.SYS_KEXEC_FILE_LOAD, "unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS,
		"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
		"lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE, "acct": unix.SYS_ACCT, "swapon": unix.SYS_SWAPON,
		"swapoff": unix.SYS_SWAPOFF, "reboot": unix.SYS_REBOOT, "settimeofday": unix.SYS_SETTIMEOFDAY,
		"clock_settime": unix.SYS_CLOCK_SETTIME, "clone": unix.SYS_CLONE, "clone3": unix.SYS_CLONE3,
		"personality": unix.SYS_PERSONALITY, "ioctl": unix.SYS_IOCTL, "openat2": unix.SYS_OPENAT2,
		"socket": unix.SYS_SOCKET, "socketpair": unix.SYS_SOCKETPAIR,
		"io_setup": unix.SYS_IO_SETUP, "io_destroy": unix.SYS_IO_DESTROY, "io_getevents": unix.SYS_IO_GETEVENTS,
		"io_submit": unix.SYS_IO_SUBMIT, "io_cancel": unix.SYS_IO_CANCEL, "io_pgetevents": unix.SYS_IO_PGETEVENTS,
		"fchmod": unix.SYS_FCHMOD, "fchmodat": unix.SYS_FCHMODAT, "fchmodat2": unix.SYS_FCHMODAT2,
		"openat": unix.SYS_OPENAT, "mkdirat": unix.SYS_MKDIRAT, "mknodat": unix.SYS_MKNODAT,
	}
	addArchSpecific(got)
	for name := range want {
		g, ok := got[name]
		if !ok {
			g = -1
		}
		if tbl := tableNr(name); tbl != g {
			t.Errorf("%s on %s: table has %d, x/sys/unix has %d", name, runtime.GOARCH, tbl, g)
		}
	}
	consts := []struct {
		name      string
		got, want uint64
	}{
		{"SECCOMP_RET_KILL_PROCESS", retKillProcess, unix.SECCOMP_RET_KILL_PROCESS},
		{"SECCOMP_RET_ERRNO", retErrno, unix.SECCOMP_RET_ERRNO},
		{"SECCOMP_RET_ALLOW", retAllow, unix.SECCOMP_RET_ALLOW},
		{"EPERM", errnoEPERM, uint64(unix.EPERM)},
		{"ENOSYS", errnoENOSYS, uint64(unix.ENOSYS)},
		{"AUDIT_ARCH_X86_64", auditArchX86_64, unix.AUDIT_ARCH_X86_64},
		{"AUDIT_ARCH_AARCH64", auditArchAARCH64, unix.AUDIT_ARCH_AARCH64},
		{"CLONE_NEW*", cloneNewMask, unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET},
		{"TIOCSTI", tiocsti, unix.TIOCSTI},
		{"TIOCLINUX", tioclinux, unix.TIOCLINUX},
		{"AF_UNIX", afUnix, unix.AF_UNIX}, {"AF_INET", afInet, unix.AF_INET}, {"AF_INET6", afInet6, unix.AF_INET6},
		{"AF_NETLINK", afNetlink, unix.AF_NETLINK}, {"NETLINK_ROUTE", netlinkRoute, unix.NETLINK_ROUTE},
		{"EAFNOSUPPORT", errnoEAFNOSUPPORT, uint64(unix.EAFNOSUPPORT)},
		{"IPPROTO_MPTCP", ipprotoMPTCP, unix.IPPROTO_MPTCP},
	}
	for _, c := range consts {
		if c.got != c.want {
			t.Errorf("%s: got %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func allSysnums() []sysnum {
	out := append([]sysnum(nil), refused...)
	out = append(out, sysClone, sysClone3, sysPersonality, sysIoctl, sysOpenat2, sysSocket, sysSocketpair)
	out = append(out, aioCalls...)
	for _, m := range setidModes {
		out = append(out, m.sysnum)
	}
	return out
}

func sysnums() []string {
	var out []string
	for _, s := range allSysnums() {
		out = append(out, s.name)
	}
	return out
}

func tableNr(name string) int {
	for _, s := range allSysnums() {
		if s.name == name {
			return s.nr(runtime.GOARCH)
		}
	}
	return -2
}

func TestInstallErrorsAreClassed(t *testing.T) {
	err := fmt.Errorf("box init: %w", &InstallError{Op: "prctl", Err: unix.EINVAL})
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("InstallError does not unwrap to its cause")
	}
	if got := errs.ClassOf(err); got != errs.Unavailable {
		t.Errorf("class: got %v, want %v", got, errs.Unavailable)
	}
}

func TestSupported(t *testing.T) {
	requireSeccomp(t)
	ok, why := Supported()
	if !ok {
		t.Fatalf("Supported: got false (%s) on a kernel that reports seccomp in /proc/self/status", why)
	}
}

// BenchmarkSyscall measures what the filter adds to a system call that
// passes it (getppid, which runs the whole list before being allowed), as
// the time per call in a child with and without the filter.
func BenchmarkSyscall(b *testing.B) {
	for _, filter := range []bool{false, true} {
		b.Run(fmt.Sprintf("filter=%v", filter), func(b *testing.B) {
			out, sig := runChild(b, childReq{Filter: filter, Bench: max(b.N, 1000)})
			if sig != 0 {
				b.Fatalf("child killed by %v", sig)
			}
			b.ReportMetric(out.NsPerCall, "ns/syscall")
		})
	}
}
