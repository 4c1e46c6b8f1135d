package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/starttrace"

	"github.com/airlock-run/airlock/sandbox/cgroup"
	"github.com/airlock-run/airlock/sandbox/seccomp"
)

// fixedBwrap is the first upstream bubblewrap release the reference's
// advisory (symbolic links in bind sources redirecting a mount) names as
// fixed.
const fixedBwrap = "0.12.0"

// Probe reports what this host can do, without starting any process: it
// reads the bubblewrap binary, /proc and /sys. The CLI adds the result of
// actually starting a box (runner.Check) to it. It keeps no cache across
// runs; a kernel probes under its own (Caches.Probe).
func Probe() Report { return probe(nil) }

// probe is Probe under c.
func probe(c *Caches) Report {
	defer starttrace.Begin("probe")()
	r := Report{OS: "linux", Protected: true}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		r.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	r.Bubblewrap = findBwrap(os.Getenv("PATH"), c)
	r.UserNS = probeUserNS(r.Bubblewrap)
	r.Seccomp = probeSeccomp()
	r.Cgroup = probeCgroup()
	r.Yama = probeYama()
	r.Landlock = probeLandlock() // execlist_linux.go
	r.Runsc = probeRunsc(os.Getenv("PATH"), c)
	r.GVisor = r.Runsc.Path
	r.KVM = probeKVM()
	r.findings()
	return r
}

// probeFor probes what Resolve needs to answer requested: tier 2 needs
// the whole probe (runsc, and tier 1 beneath it); auto and tier 1 need
// only what decides tier 1 (bubblewrap, user namespaces, seccomp) and
// its findings. The rest of a full probe (runsc's ELF and build
// information, cgroup hierarchy, Landlock, Yama, KVM) is read where a box
// needs it (Plan, the runner's cgroup) or by `airlock sandbox check`, and
// on every start it was most of the probe's time.
func probeFor(requested Tier, c *Caches) Report {
	if requested == Tier2 {
		return probe(c)
	}
	defer starttrace.Begin("probe")()
	r := Report{OS: "linux", Protected: true}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		r.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	r.Bubblewrap = findBwrap(os.Getenv("PATH"), c)
	r.UserNS = probeUserNS(r.Bubblewrap)
	r.Seccomp = probeSeccomp()
	r.decide(r.tier1Findings())
	return r
}

func (r *Report) add(sev, topic, text, fix string) {
	r.Findings = append(r.Findings, Finding{Severity: sev, Topic: topic, Text: text, Fix: fix})
}

func (r *Report) findings() {
	tier1, why := r.tier1Findings()
	r.hostFindings()
	r.decide(tier1, why)
}

// tier1Findings are the findings of what tier 1 needs (bubblewrap, user
// namespaces, seccomp): whether the host gives it, and why not.
func (r *Report) tier1Findings() (tier1 bool, why []string) {
	bw := r.Bubblewrap
	tier1 = true
	switch {
	case bw.Path == "":
		tier1 = false
		why = append(why, "bubblewrap is not installed")
		r.add(SevError, "bubblewrap", "bubblewrap (bwrap) was not found on PATH nor in /usr/bin, /usr/local/bin, /bin.",
			"Install bubblewrap 0.12.0 or later from your distribution (apt install bubblewrap, dnf install bubblewrap) or build it from https://github.com/containers/bubblewrap.")
	case bw.Err != "":
		tier1 = false
		why = append(why, "bubblewrap could not be read")
		r.add(SevError, "bubblewrap", "bubblewrap at "+bw.Path+" could not be read: "+bw.Err+".", "Make "+bw.Path+" readable by the user running airlock, or reinstall bubblewrap.")
	default:
		if bw.Version == "" {
			r.add(SevWarn, "bubblewrap", "bubblewrap at "+bw.Path+" has no version string airlock recognises.", "Install bubblewrap 0.12.0 or later from a trusted source.")
		} else if versionLess(bw.Version, fixedBwrap) {
			mit := "airlock mitigates it: every bind source is resolved one component at a time and opened with O_PATH|O_NOFOLLOW, a bind whose path, any symbolic link on the way or its target lies in a writable directory is refused, and bubblewrap binds the pinned descriptor"
			if bw.BindFD {
				mit += " (--ro-bind-fd, which checks device and inode after mounting)"
			} else {
				mit += " through /proc/self/fd/N"
			}
			mit += "; where airlock's init runs inside the box (boxes with network, or a bubblewrap without --ro-bind-fd) it checks each bind's device and inode again before the command starts"
			r.add(SevWarn, "bubblewrap advisory",
				fmt.Sprintf("bubblewrap %s at %s is older than %s, which fixes the advisory about symbolic links in bind sources redirecting a mount onto the host; %s.", bw.Version, bw.Path, fixedBwrap, mit),
				"Upgrade bubblewrap to "+fixedBwrap+" or later from a trusted package source when your distribution has it; until then the mitigation above holds for airlock's own binds.")
		}
		if !bw.DisableUserns {
			r.add(SevWarn, "bubblewrap", "bubblewrap "+bw.Version+" has no --disable-userns (added in 0.8.0); only the seccomp filter stops the box from creating user namespaces.", "Upgrade bubblewrap to 0.8.0 or later.")
		}
		if !bw.BindFD {
			r.add(SevInfo, "bubblewrap", "bubblewrap "+bw.Version+" has no --ro-bind-fd; airlock binds /proc/self/fd/N and checks each bind's device and inode from inside the box.", "Upgrade bubblewrap to 0.10.0 or later (Debian 12 has it backported in 0.8.0-2+deb12u1).")
		}
		if bw.Setuid {
			r.add(SevWarn, "bubblewrap", "bubblewrap at "+bw.Path+" is installed setuid root; airlock works with it, but a setuid sandbox helper has a long history of privilege escalations.", "Remove the setuid bit (chmod u-s "+bw.Path+") on a kernel that allows unprivileged user namespaces.")
		}
	}
	u := r.UserNS
	if !u.Available {
		tier1 = false
		why = append(why, "user namespaces are unavailable")
		r.add(SevError, "user namespaces", u.Why, u.Fix)
	}
	if !r.Seccomp.Available {
		r.add(SevError, "seccomp", "seccomp filters cannot be used: "+r.Seccomp.Why+".", "Use a kernel (4.14 or later) built with CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER; every mainstream distribution kernel has them.")
		tier1 = false
		why = append(why, "seccomp filters are unavailable")
	}
	return tier1, why
}

// hostFindings are the findings of the rest: cgroup, Landlock, channels,
// Yama, gVisor, KVM.
func (r *Report) hostFindings() {
	cg := r.Cgroup
	switch {
	case cg.Version == 0:
		r.add(SevWarn, "cgroup", "no usable cgroup hierarchy was found ("+strings.TrimSuffix(cg.Fix, ".")+"); memory, CPU and process limits cannot be applied and a run that asks for them is refused.", "Mount cgroup2 at /sys/fs/cgroup (systemd does this by default) and run airlock as root or in a delegated subtree (systemd-run --user --scope -p Delegate=yes).")
	case len(cg.Missing) > 0:
		r.add(SevWarn, "cgroup", fmt.Sprintf("cgroup v%d: the controllers %s cannot be used; a run that asks for their limits is refused.", cg.Version, strings.Join(cg.Missing, ", ")), cg.Fix)
	case !cg.Writable:
		r.add(SevWarn, "cgroup", fmt.Sprintf("cgroup v%d at %s is not writable by this user; limits are refused.", cg.Version, cg.Root), "Run airlock as root or inside a delegated cgroup (systemd-run --user --scope -p Delegate=yes -- airlock ...).")
	}
	r.landlockFindings() // execlist_linux.go
	r.channelFindings()  // channels_linux.go
	if !r.Yama.Present {
		r.add(SevInfo, "ptrace", "the Yama LSM is not active (no /proc/sys/kernel/yama/ptrace_scope); a policy with sandbox.ptrace: true is refused, because a tracer in the box could trace any process of the same user.", "Boot a kernel with Yama (security=yama or lsm=...,yama) and set kernel.yama.ptrace_scope=1 to allow ptrace for debuggers.")
	} else if r.Yama.PtraceScope < 1 {
		r.add(SevInfo, "ptrace", fmt.Sprintf("kernel.yama.ptrace_scope is %d; a policy with sandbox.ptrace: true is refused.", r.Yama.PtraceScope), "sysctl -w kernel.yama.ptrace_scope=1 (and add it to /etc/sysctl.d/ to keep it).")
	}
	switch gv := r.Runsc; {
	case gv.Path == "":
		r.add(SevInfo, "gvisor", "gVisor (runsc) was not found; tier 2 is unavailable and a run asking for --sandbox 2 or isolation: gvisor is refused.", "To make tier 2 possible, "+gvisorInstall+".")
	case !gv.Usable:
		r.add(SevWarn, "gvisor", gv.Why+"; tier 2 is refused.", gv.Fix+".")
	default:
		r.add(SevInfo, "gvisor", "gVisor runsc "+gv.Version+" at "+gv.Path+" (static, platform "+gv.Platform+"): tier 2 is given on request (--sandbox 2 or isolation: gvisor), never by auto.", "None needed.")
	}
	if !r.KVM {
		r.add(SevInfo, "kvm", "/dev/kvm is absent; microVM isolation is unavailable.", "Run on a host or VM with KVM (nested virtualisation enabled) if microVMs are wanted.")
	}
}

// decide sets the best tier from tier1Findings' answer.
func (r *Report) decide(tier1 bool, why []string) {
	switch {
	case tier1:
		r.Best = Tier1
		r.Why = "bubblewrap " + r.Bubblewrap.Version + " with user namespaces and seccomp"
	default:
		r.Best = Tier0
		r.Protected = false
		r.Why = "tier 1 unavailable: " + strings.Join(why, "; ")
	}
}

func readInt(path string) (int, bool) {
	data, err := readSysctl(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return n, err == nil
}

// readSysctl reads one of the kernel's small files whole: an open and a
// read or two. os.ReadFile stats the file first and puts it to the
// runtime's poller (refused for a file, then undone), three more calls
// for each sysctl every probe and every plan reads (usernsBlocked).
func readSysctl(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case m == 0:
			return append([]byte(nil), buf[:n]...), nil
		}
		n += m
	}
	return nil, &os.PathError{Op: "read", Path: path, Err: errors.New("longer than a sysctl")}
}

func probeUserNS(bw bwrapInfo) UserNSReport {
	_, err := os.Stat("/proc/self/ns/user")
	return userNSFrom(readInt, err == nil, os.Geteuid() == 0 || bw.Setuid)
}

// userNSFrom decides from the sysctls read, whether the kernel has user
// namespaces at all, and whether bubblewrap runs privileged (as root, or
// installed setuid), which the unprivileged restrictions do not bind.
func userNSFrom(readInt func(string) (int, bool), hasNS, privileged bool) UserNSReport {
	u := UserNSReport{Available: true}
	root := privileged
	if n, ok := readInt("/proc/sys/user/max_user_namespaces"); ok {
		u.MaxUserNamespaces = n
		if n == 0 {
			u.Available = false
			u.Why = "user namespaces are switched off (user.max_user_namespaces = 0)."
			u.Fix = "sysctl -w user.max_user_namespaces=15000 (and add it to /etc/sysctl.d/ to keep it)."
			return u
		}
	}
	if !hasNS {
		u.Available = false
		u.Why = "the kernel has no user namespaces (CONFIG_USER_NS)."
		u.Fix = "Use a kernel built with CONFIG_USER_NS=y."
		return u
	}
	if n, ok := readInt("/proc/sys/kernel/unprivileged_userns_clone"); ok {
		v := n
		u.UnprivilegedClone = &v
		if n == 0 && !root {
			u.Available = false
			u.Why = "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0) and airlock is not running as root."
			u.Fix = "sysctl -w kernel.unprivileged_userns_clone=1 (and add it to /etc/sysctl.d/ to keep it)."
			return u
		}
	}
	if n, ok := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok {
		v := n
		u.AppArmorRestrict = &v
		if n != 0 && !root {
			u.Available = false
			u.Why = "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1, the Ubuntu 24.04 default), so bubblewrap cannot create the box."
			u.Fix = "Load Ubuntu's own AppArmor profile for bwrap (shipped by the apparmor package, 4.0.1 or later): sudo install -m 644 /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/ && sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict. Never load an unconfined profile for bwrap; sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 also works but lifts the restriction for every program."
			return u
		}
	}
	return u
}

func probeSeccomp() SeccompReport {
	s := SeccompReport{}
	s.Available, s.Why = seccomp.Supported()
	if data, err := readSysctl("/proc/sys/kernel/seccomp/actions_avail"); err == nil {
		s.Actions = strings.Fields(string(data))
	}
	return s
}

// probeCgroup reports the hierarchy package cgroup would use.
func probeCgroup() CgroupReport {
	i := cgroup.Detect()
	c := CgroupReport{Version: i.Version, Controllers: i.Controllers, Writable: i.Writable, Fix: i.Reason}
	if i.Version != 0 {
		c.Root = "/sys/fs/cgroup"
	}
	for _, w := range []string{cgroup.Memory, cgroup.CPU, cgroup.Pids} {
		if !i.Has(w) {
			c.Missing = append(c.Missing, w)
		}
	}
	return c
}

func probeYama() YamaReport {
	n, ok := readInt("/proc/sys/kernel/yama/ptrace_scope")
	return YamaReport{Present: ok, PtraceScope: n}
}

// ptraceScoped says whether a box may be given ptrace: only where Yama keeps
// tracing to a process's own descendants.
func ptraceScoped() (bool, string) {
	y := probeYama()
	if !y.Present {
		return false, "refused: this host has no Yama LSM (kernel.yama.ptrace_scope), so a tracer in the box could trace other processes of the same user; boot with Yama and set kernel.yama.ptrace_scope=1"
	}
	if y.PtraceScope < 1 {
		return false, fmt.Sprintf("refused: kernel.yama.ptrace_scope is %d; set it to 1 or more (sysctl -w kernel.yama.ptrace_scope=1)", y.PtraceScope)
	}
	return true, ""
}

func probeGVisor(pathEnv string, c *Caches) string {
	p, _ := hostProgram(pathEnv, "runsc", c, func(p string, st os.FileInfo) bool {
		return st.Mode().IsRegular() && st.Mode()&0o111 != 0 && rootsFile(p, st)
	}, "/usr/local/bin", "/usr/bin", "/usr/sbin")
	return p
}

func probeKVM() bool {
	_, err := os.Stat("/dev/kvm")
	return err == nil
}

// usernsBlocked returns why bubblewrap cannot create its user namespace
// here, or "".
func usernsBlocked(bw bwrapInfo) string {
	u := probeUserNS(bw)
	if u.Available {
		return ""
	}
	return strings.TrimSuffix(u.Why, ".") + " (" + strings.TrimSuffix(u.Fix, ".") + ")"
}

func tier2Unavailable(c *Caches) error {
	gv := probeRunsc(os.Getenv("PATH"), c)
	return errs.Unavailablef("sandbox tier 2: %s (%s)", gv.Why, gv.Fix)
}
