// Package seccomp builds and installs the system-call filter of airlock's
// tier-1 box: a classic BPF program that refuses the calls a confined process
// never needs and that have a record of turning into escapes (io_uring, bpf,
// the keyrings, ptrace and cross-process memory access, the mount API, module
// and kexec loading, namespace creation, terminal injection), allows only
// the socket families a box needs (AF_VSOCK and the rest reach past its
// network namespace), answers native AIO with "not implemented" (its
// contexts are a host-wide pool), answers clone3
// with "not implemented" so the C library falls back to clone (whose flags a
// filter can read), and kills a process that calls through a foreign
// architecture or the x32 ABI.
//
// Program is pure and builds for every supported architecture on any host,
// so the program can be inspected and tested anywhere; Install loads it into
// the calling process and exists only on Linux. The package is imported by
// the in-box init (sandbox/boxinit), by the sandbox planner and probe, and by
// the escape matrix; nothing else needs it.
package seccomp

import (
	"errors"
	"fmt"
	"sort"

	"golang.org/x/net/bpf"
)

// Options widen the filter for one box. The zero value is the strictest
// filter.
type Options struct {
	// Ptrace allows ptrace and the cross-process memory calls
	// (process_vm_readv/writev) that debuggers and profilers such as gdb,
	// strace and py-spy need. The planner grants it only where
	// kernel.yama.ptrace_scope keeps tracing to a process's own descendants.
	Ptrace bool
	// SetGID allows S_ISGID (never S_ISUID) in the calls that change a
	// mode or make a directory, so `chmod g+s dir` works in a writable
	// grant. The planner sets it only when the box's group is not the
	// host's group 0: a set-group-ID file made by the box then carries the
	// group of the user who ran airlock, which that user's own files carry
	// and which gives nobody a group they could not be given by that user
	// anyway; with group 0 it would be a set-group-ID-root program on the
	// host. The calls that create files (open, openat, creat, mknod,
	// mknodat) refuse both bits whatever this says.
	SetGID bool
}

// Action is what the filter answers to a call.
type Action uint8

const (
	// Allow lets the call through to the kernel.
	Allow Action = iota
	// Refuse answers EPERM without running the call.
	Refuse
	// NotImplemented answers ENOSYS, so a caller falls back to an older
	// call (clone3 → clone).
	NotImplemented
	// Kill ends the whole process (SECCOMP_RET_KILL_PROCESS).
	Kill
	// Unsupported answers EAFNOSUPPORT: a socket family the box does not
	// have, as on a kernel built without it.
	Unsupported
)

var actionNames = [...]string{"allow", "EPERM", "ENOSYS", "kill", "EAFNOSUPPORT"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", a)
}

// Rule is one line of the filter as a person reads it: a system call, what
// the filter answers, and the condition under which it answers so (empty:
// always).
type Rule struct {
	Name   string `json:"name"`
	Nr     int    `json:"nr"`
	Action Action `json:"-"`
	// ActionName is Action as text, for JSON readers.
	ActionName string `json:"action"`
	// When is the argument condition, "" when the rule holds for every call.
	When string `json:"when,omitempty"`
	// Why is the reason the call is refused, one short phrase.
	Why string `json:"why"`
}

// ABI constants of seccomp and BPF. They are fixed by the kernel's ABI and
// spelled out here (rather than taken from golang.org/x/sys/unix, whose
// constants exist only in Linux builds) so Program builds on every host; a
// Linux test checks them against x/sys/unix.
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000

	errnoEPERM  = 1
	errnoENOSYS = 38

	auditArchX86_64  = 0xc000003e
	auditArchAARCH64 = 0xc00000b7

	// x32BitSyscall marks an x32-ABI call on amd64 (__X32_SYSCALL_BIT).
	x32BitSyscall = 0x40000000

	// Offsets into struct seccomp_data: nr, arch, instruction_pointer,
	// args[6]. The arguments are 64-bit and both supported architectures are
	// little-endian, so an argument's low word is at 16+8*i.
	offNr   = 0
	offArch = 4
	offArg0 = 16

	// cloneNewMask is every CLONE_NEW* flag clone(2) accepts: NEWNS,
	// NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET. (CLONE_NEWTIME,
	// 0x80, lies inside clone's exit-signal byte and is only reachable
	// through clone3 and unshare, both refused outright.) The kernel reads
	// only the low 32 bits of clone's flags, so the low word decides.
	cloneNewMask = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

	tiocsti   = 0x5412
	tioclinux = 0x541c

	// ipprotoMPTCP is IPPROTO_MPTCP, socket(2)'s protocol for multipath
	// TCP.
	ipprotoMPTCP = 262

	// Personality values that stay allowed: PER_LINUX, ADDR_NO_RANDOMIZE
	// (which sanitiser builds such as `go test -race` set on themselves) and
	// 0xffffffff, which only reads the current value.
	perLinux         = 0x0000000
	addrNoRandomize  = 0x0040000
	personalityQuery = 0xffffffff
)

// archInfo is what the filter needs to know of one architecture.
type archInfo struct {
	audit uint32
	x32   bool // has the x32 ABI whose calls carry x32BitSyscall
}

var arches = map[string]archInfo{
	"amd64": {audit: auditArchX86_64, x32: true},
	"arm64": {audit: auditArchAARCH64},
}

// Arches lists the architectures Program can build for.
func Arches() []string {
	out := make([]string, 0, len(arches))
	for a := range arches {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// sysnum is one system call's number per architecture; -1 where the
// architecture has no such call.
type sysnum struct {
	name         string
	amd64, arm64 int
	why          string
	ptrace       bool // allowed when Options.Ptrace
}

func (s sysnum) nr(arch string) int {
	if arch == "arm64" {
		return s.arm64
	}
	return s.amd64
}

// refused is every call the filter answers EPERM regardless of arguments.
// Numbers come from the kernel's syscall tables (arch/x86/entry/syscalls/
// syscall_64.tbl and the generic table arm64 uses); a Linux test checks the
// running architecture's column against golang.org/x/sys/unix.
var refused = []sysnum{
	{"io_uring_setup", 425, 425, "io_uring runs calls the filter never sees", false},
	{"io_uring_enter", 426, 426, "io_uring runs calls the filter never sees", false},
	{"io_uring_register", 427, 427, "io_uring runs calls the filter never sees", false},
	{"bpf", 321, 280, "kernel programs and maps", false},
	{"keyctl", 250, 219, "kernel keyrings are shared with the host user", false},
	{"add_key", 248, 217, "kernel keyrings are shared with the host user", false},
	{"request_key", 249, 218, "kernel keyrings are shared with the host user", false},
	{"ptrace", 101, 117, "tracing steps around the filter", true},
	{"process_vm_readv", 310, 270, "reads another process's memory", true},
	{"process_vm_writev", 311, 271, "writes another process's memory", true},
	{"pidfd_getfd", 438, 438, "steals another process's descriptors", false},
	{"perf_event_open", 298, 241, "kernel profiling, a steady source of kernel bugs", false},
	{"userfaultfd", 323, 282, "stalls the kernel mid-copy, a race-exploit primitive", false},
	{"mount", 165, 40, "mount family", false},
	{"umount2", 166, 39, "mount family", false},
	{"pivot_root", 155, 41, "mount family", false},
	{"open_tree", 428, 428, "new mount API", false},
	{"move_mount", 429, 429, "new mount API", false},
	{"fsopen", 430, 430, "new mount API", false},
	{"fsconfig", 431, 431, "new mount API", false},
	{"fsmount", 432, 432, "new mount API", false},
	{"fspick", 433, 433, "new mount API", false},
	{"mount_setattr", 442, 442, "new mount API", false},
	{"open_tree_attr", 467, 467, "new mount API", false},
	{"init_module", 175, 105, "kernel modules", false},
	{"finit_module", 313, 273, "kernel modules", false},
	{"delete_module", 176, 106, "kernel modules", false},
	{"kexec_load", 246, 104, "replaces the running kernel", false},
	{"kexec_file_load", 320, 294, "replaces the running kernel", false},
	{"unshare", 272, 97, "creates namespaces", false},
	{"setns", 308, 268, "enters namespaces", false},
	{"open_by_handle_at", 304, 265, "opens files by handle, around the mount view", false},
	{"name_to_handle_at", 303, 264, "file handles are only useful to open_by_handle_at", false},
	{"iopl", 172, -1, "raw I/O port access", false},
	{"ioperm", 173, -1, "raw I/O port access", false},
	{"lookup_dcookie", 212, 18, "kernel profiling internals", false},
	{"acct", 163, 89, "process accounting is host-wide", false},
	{"swapon", 167, 224, "host-wide swap", false},
	{"swapoff", 168, 225, "host-wide swap", false},
	{"reboot", 169, 142, "host-wide", false},
	{"settimeofday", 164, 170, "host clock", false},
	{"clock_settime", 227, 112, "host clock", false},
}

// modeCall is a call whose mode argument (argument index arg) may carry
// S_ISUID or S_ISGID.
type modeCall struct {
	sysnum
	arg int
	// gidOK marks the calls that change a mode or make a directory, which
	// may set S_ISGID under Options.SetGID.
	gidOK bool
}

// setidModes are the calls that set a file's mode. The box may run as a
// user namespace's root mapped to the host's root (airlock run as root, as
// in CI); a file it marks set-user-ID in a writable directory would then be
// a set-user-ID-root program on the host, so any mode with S_ISUID or
// S_ISGID is refused (Options.SetGID lets S_ISGID through where it is
// safe). open and openat are refused on the mode alone, which a caller
// without O_CREAT or O_TMPFILE passes as 0.
var setidModes = []modeCall{
	{sysnum{"chmod", 90, -1, "", false}, 1, true},
	{sysnum{"fchmod", 91, 52, "", false}, 1, true},
	{sysnum{"fchmodat", 268, 53, "", false}, 2, true},
	{sysnum{"fchmodat2", 452, 452, "", false}, 2, true},
	{sysnum{"open", 2, -1, "", false}, 2, false},
	{sysnum{"openat", 257, 56, "", false}, 3, false},
	{sysnum{"creat", 85, -1, "", false}, 1, false},
	{sysnum{"mkdir", 83, -1, "", false}, 1, true},
	{sysnum{"mkdirat", 258, 34, "", false}, 2, true},
	{sysnum{"mknod", 133, -1, "", false}, 1, false},
	{sysnum{"mknodat", 259, 33, "", false}, 2, false},
}

// setidBits is S_ISUID|S_ISGID.
const setidBits = 04000 | 02000

// setuidBit is S_ISUID, all a gidOK call is checked for under
// Options.SetGID.
const setuidBit = 04000

// modeLabel is the block that checks m's mode under opts.
func modeLabel(m modeCall, opts Options) string {
	if m.gidOK && opts.SetGID {
		return fmt.Sprintf("umode%d", m.arg)
	}
	return fmt.Sprintf("mode%d", m.arg)
}

// Calls that get a rule of their own below.
var (
	// openat2 takes its mode inside a struct behind a pointer, which a
	// filter cannot read; "not implemented" sends callers back to openat.
	sysOpenat2     = sysnum{"openat2", 437, 437, "", false}
	sysClone       = sysnum{"clone", 56, 220, "", false}
	sysClone3      = sysnum{"clone3", 435, 435, "", false}
	sysPersonality = sysnum{"personality", 135, 92, "", false}
	sysIoctl       = sysnum{"ioctl", 16, 29, "", false}
)

// ErrArch is returned for an architecture Program has no table for.
var ErrArch = errors.New("seccomp: unsupported architecture")

// Rules lists the filter's rules for arch with opts, in the order the program
// checks them. Calls not listed are allowed.
func Rules(arch string, opts Options) ([]Rule, error) {
	if _, ok := arches[arch]; !ok {
		return nil, fmt.Errorf("%w %q (have %v)", ErrArch, arch, Arches())
	}
	var out []Rule
	add := func(s sysnum, a Action, when, why string) {
		out = append(out, Rule{Name: s.name, Nr: s.nr(arch), Action: a, ActionName: a.String(), When: when, Why: why})
	}
	for _, s := range refused {
		if s.nr(arch) < 0 || (s.ptrace && opts.Ptrace) {
			continue
		}
		add(s, Refuse, "", s.why)
	}
	add(sysClone, Refuse, "flags & CLONE_NEW*", "creates namespaces")
	add(sysClone3, NotImplemented, "", "its flags are behind a pointer the filter cannot read; libc falls back to clone")
	add(sysOpenat2, NotImplemented, "", "its mode is behind a pointer the filter cannot read; callers fall back to openat")
	for _, m := range setidModes {
		switch {
		case m.nr(arch) < 0:
		case m.gidOK && opts.SetGID:
			add(m.sysnum, Refuse, fmt.Sprintf("arg%d (mode) & S_ISUID", m.arg), "a set-user-ID file made by the box's root would be set-user-ID root on the host")
		default:
			add(m.sysnum, Refuse, fmt.Sprintf("arg%d (mode) & (S_ISUID|S_ISGID)", m.arg), "a set-ID file made by the box's root would be set-ID root on the host")
		}
	}
	add(sysPersonality, Refuse, "persona not in {0, ADDR_NO_RANDOMIZE, 0xffffffff}", "other personas change the address-space layout and syscall semantics")
	add(sysIoctl, Refuse, "request == TIOCSTI or TIOCLINUX", "pushes keystrokes into the terminal")
	add(sysSocket, Refuse, "protocol == IPPROTO_MPTCP", "Landlock's TCP port rules do not cover multipath TCP")
	channelRules(arch, add)
	return out, nil
}

// Program returns the filter for arch ("amd64" or "arm64", GOARCH names) with
// opts, as the raw instructions the kernel loads.
func Program(arch string, opts Options) ([]bpf.RawInstruction, error) {
	info, ok := arches[arch]
	if !ok {
		return nil, fmt.Errorf("%w %q (have %v)", ErrArch, arch, Arches())
	}
	var p prog
	// A call made through another architecture's entry point (i386's int
	// 0x80 on amd64, AArch32 on arm64) has other numbers: the table below
	// would misread it, so the process dies.
	p.load(offArch)
	p.jumpIfNot(info.audit, "kill")
	p.load(offNr)
	if info.x32 {
		// x32 calls carry bit 30 in the number and share most of amd64's
		// numbers; refusing by number alone would let them through.
		p.jumpGE(x32BitSyscall, "kill")
	}
	for _, s := range refused {
		nr := s.nr(arch)
		if nr < 0 || (s.ptrace && opts.Ptrace) {
			continue
		}
		p.jumpIf(uint32(nr), "eperm")
	}
	p.jumpIf(uint32(sysClone3.nr(arch)), "enosys")
	p.jumpIf(uint32(sysOpenat2.nr(arch)), "enosys")
	for _, m := range setidModes {
		if nr := m.nr(arch); nr >= 0 {
			p.jumpIf(uint32(nr), modeLabel(m, opts))
		}
	}
	p.jumpIf(uint32(sysClone.nr(arch)), "clone")
	p.jumpIf(uint32(sysPersonality.nr(arch)), "personality")
	p.jumpIf(uint32(sysIoctl.nr(arch)), "ioctl")
	p.channelDispatch(arch)
	p.ret(retAllow)

	p.channelBlocks()

	p.label("clone")
	p.load(offArg0) // flags, low word
	p.jumpSet(cloneNewMask, "eperm")
	p.ret(retAllow)

	// The mode is a umode_t (unsigned short) to the kernel: the low word
	// holds all of it.
	for _, arg := range []int{1, 2, 3} {
		p.label(fmt.Sprintf("mode%d", arg))
		p.load(offArg0 + 8*uint32(arg))
		p.jumpSet(setidBits, "eperm")
		p.ret(retAllow)
	}
	if opts.SetGID {
		for _, arg := range []int{1, 2} {
			p.label(fmt.Sprintf("umode%d", arg))
			p.load(offArg0 + 8*uint32(arg))
			p.jumpSet(setuidBit, "eperm")
			p.ret(retAllow)
		}
	}

	p.label("personality")
	p.load(offArg0) // the kernel takes an unsigned int: the low word is all of it
	p.jumpIf(perLinux, "allow")
	p.jumpIf(addrNoRandomize, "allow")
	p.jumpIf(personalityQuery, "allow")
	p.ret(retErrno | errnoEPERM)

	p.label("ioctl")
	// The request is an unsigned int to the kernel, so only the low word
	// is compared: a filter that also demanded a zero high word could be
	// passed by setting high bits the kernel then drops.
	p.load(offArg0 + 8)
	p.jumpIf(tiocsti, "eperm")
	p.jumpIf(tioclinux, "eperm")

	p.label("allow")
	p.ret(retAllow)
	p.label("eperm")
	p.ret(retErrno | errnoEPERM)
	p.label("enosys")
	p.ret(retErrno | errnoENOSYS)
	p.label("kill")
	p.ret(retKillProcess)
	return p.assemble()
}

// prog assembles a BPF program with forward jumps to named labels.
type prog struct {
	ins    []bpf.Instruction
	fix    []fixup
	labels map[string]int
	// dup is a label defined twice: the program would be wrong (every
	// jump to it would land on the last one), so assemble refuses it.
	dup string
}

type fixup struct {
	at     int
	target string
}

func (p *prog) load(off uint32) { p.ins = append(p.ins, bpf.LoadAbsolute{Off: off, Size: 4}) }
func (p *prog) ret(v uint32)    { p.ins = append(p.ins, bpf.RetConstant{Val: v}) }

func (p *prog) jump(cond bpf.JumpTest, v uint32, target string) {
	p.fix = append(p.fix, fixup{at: len(p.ins), target: target})
	p.ins = append(p.ins, bpf.JumpIf{Cond: cond, Val: v})
}
func (p *prog) jumpIf(v uint32, target string)    { p.jump(bpf.JumpEqual, v, target) }
func (p *prog) jumpIfNot(v uint32, target string) { p.jump(bpf.JumpNotEqual, v, target) }
func (p *prog) jumpGE(v uint32, target string)    { p.jump(bpf.JumpGreaterOrEqual, v, target) }
func (p *prog) jumpSet(v uint32, target string)   { p.jump(bpf.JumpBitsSet, v, target) }

func (p *prog) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	if _, ok := p.labels[name]; ok && p.dup == "" {
		p.dup = name
	}
	p.labels[name] = len(p.ins)
}

// assemble resolves the jumps (each "jump if true" to its label, falling
// through otherwise) and returns the raw program. A jump that does not fit
// BPF's 8-bit offsets is an error, never a silently wrong program.
func (p *prog) assemble() ([]bpf.RawInstruction, error) {
	if p.dup != "" {
		return nil, fmt.Errorf("seccomp: label %q defined twice", p.dup)
	}
	for _, f := range p.fix {
		to, ok := p.labels[f.target]
		if !ok {
			return nil, fmt.Errorf("seccomp: jump to undefined label %q", f.target)
		}
		skip := to - f.at - 1
		if skip < 0 || skip > 255 {
			return nil, fmt.Errorf("seccomp: jump from %d to %q is %d instructions, outside 0..255", f.at, f.target, skip)
		}
		j := p.ins[f.at].(bpf.JumpIf)
		j.SkipTrue = uint8(skip)
		p.ins[f.at] = j
	}
	if len(p.ins) > 4096 { // BPF_MAXINSNS
		return nil, fmt.Errorf("seccomp: program has %d instructions, over the kernel's 4096", len(p.ins))
	}
	return bpf.Assemble(p.ins)
}

// Encode returns prog as the bytes of a struct sock_filter array in the
// host's byte order, the form bubblewrap's --seccomp descriptor expects.
func Encode(prog []bpf.RawInstruction) []byte {
	out := make([]byte, 0, 8*len(prog))
	for _, r := range prog {
		// sock_filter{u16 code; u8 jt; u8 jf; u32 k}, little-endian on
		// every architecture Program supports.
		out = append(out, byte(r.Op), byte(r.Op>>8), r.Jt, r.Jf,
			byte(r.K), byte(r.K>>8), byte(r.K>>16), byte(r.K>>24))
	}
	return out
}
