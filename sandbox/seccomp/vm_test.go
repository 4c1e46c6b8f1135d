package seccomp

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

// data is a struct seccomp_data as the filter sees it.
type data struct {
	nr   uint32
	arch uint32
	ip   uint64
	args [6]uint64
}

// bytes lays d out for x/net/bpf's interpreter. The kernel loads each 32-bit
// word of seccomp_data in host (little-endian) order; the interpreter loads
// words big-endian, as packets are. Writing every word big-endian at the
// kernel's offsets (low half of a 64-bit field first, as little-endian memory
// has it) makes the interpreter read the values the kernel would.
func (d data) bytes() []byte {
	b := make([]byte, 64)
	put := func(off int, v uint64) {
		binary.BigEndian.PutUint32(b[off:], uint32(v))
		binary.BigEndian.PutUint32(b[off+4:], uint32(v>>32))
	}
	binary.BigEndian.PutUint32(b[0:], d.nr)
	binary.BigEndian.PutUint32(b[4:], d.arch)
	put(8, d.ip)
	for i, a := range d.args {
		put(16+8*i, a)
	}
	return b
}

// vm loads the raw program, as the kernel receives it, into the interpreter.
func vm(t testing.TB, arch string, opts Options) *bpf.VM {
	t.Helper()
	raw, err := Program(arch, opts)
	if err != nil {
		t.Fatalf("Program(%q): %v", arch, err)
	}
	ins := make([]bpf.Instruction, len(raw))
	for i, r := range raw {
		ins[i] = r.Disassemble()
		if _, ok := ins[i].(bpf.RawInstruction); ok {
			t.Fatalf("instruction %d (%#v) does not disassemble", i, r)
		}
	}
	v, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	return v
}

func run(t testing.TB, v *bpf.VM, d data) uint32 {
	t.Helper()
	out, err := v.Run(d.bytes())
	if err != nil {
		t.Fatalf("run %+v: %v", d, err)
	}
	return uint32(out)
}

var (
	allowRet  = uint32(retAllow)
	epermRet  = uint32(retErrno | errnoEPERM)
	enosysRet = uint32(retErrno | errnoENOSYS)
	killRet   = uint32(retKillProcess)
	eafnoRet  = uint32(retErrno | errnoEAFNOSUPPORT)
)

func retName(r uint32) string {
	switch r {
	case allowRet:
		return "allow"
	case epermRet:
		return "EPERM"
	case enosysRet:
		return "ENOSYS"
	case killRet:
		return "kill"
	case eafnoRet:
		return "EAFNOSUPPORT"
	}
	return fmt.Sprintf("%#x", r)
}

// oracle is an independent statement of what the filter must answer, written
// from the rule table and the kernel's argument types rather than from the
// program, so the two check each other.
func oracle(arch string, opts Options, d data) uint32 {
	info := arches[arch]
	if d.arch != info.audit {
		return killRet
	}
	if info.x32 && d.nr&x32BitSyscall != 0 {
		return killRet
	}
	for _, s := range refused {
		if n := s.nr(arch); n >= 0 && uint32(n) == d.nr && !(s.ptrace && opts.Ptrace) {
			return epermRet
		}
	}
	low := func(i int) uint32 { return uint32(d.args[i]) }
	for _, m := range setidModes {
		if n := m.nr(arch); n >= 0 && uint32(n) == d.nr {
			bits := uint32(04000 | 02000)
			if m.gidOK && opts.SetGID {
				bits = 04000
			}
			if low(m.arg)&bits != 0 {
				return epermRet
			}
			return allowRet
		}
	}
	for _, s := range aioCalls {
		if uint32(s.nr(arch)) == d.nr {
			return enosysRet
		}
	}
	switch int(d.nr) {
	case sysSocket.nr(arch):
		if low(2) == ipprotoMPTCP {
			return epermRet
		}
		switch low(0) {
		case 1, 2, 10: // AF_UNIX, AF_INET, AF_INET6
		case 16: // AF_NETLINK, NETLINK_ROUTE only
			if low(2) != 0 {
				return eafnoRet
			}
		default:
			return eafnoRet
		}
	case sysSocketpair.nr(arch):
		if low(0) != 1 {
			return eafnoRet
		}
	case sysClone3.nr(arch), sysOpenat2.nr(arch):
		return enosysRet
	case sysClone.nr(arch):
		if low(0)&cloneNewMask != 0 {
			return epermRet
		}
	case sysPersonality.nr(arch):
		switch low(0) {
		case 0, addrNoRandomize, 0xffffffff:
		default:
			return epermRet
		}
	case sysIoctl.nr(arch):
		if low(1) == tiocsti || low(1) == tioclinux {
			return epermRet
		}
	}
	return allowRet
}

func TestProgramEveryNumber(t *testing.T) {
	for _, arch := range Arches() {
		for _, opts := range []Options{{}, {Ptrace: true}, {SetGID: true}} {
			t.Run(fmt.Sprintf("%s/%+v", arch, opts), func(t *testing.T) {
				v := vm(t, arch, opts)
				audit := arches[arch].audit
				// Every number a kernel could have, and then some.
				for nr := uint32(0); nr < 1024; nr++ {
					d := data{nr: nr, arch: audit}
					if got, want := run(t, v, d), oracle(arch, opts, d); got != want {
						t.Errorf("nr %d: got %s, want %s", nr, retName(got), retName(want))
					}
				}
			})
		}
	}
}

func TestProgramRules(t *testing.T) {
	for _, arch := range Arches() {
		rules, err := Rules(arch, Options{})
		if err != nil {
			t.Fatal(err)
		}
		v := vm(t, arch, Options{})
		audit := arches[arch].audit
		for _, r := range rules {
			if r.When != "" {
				continue // argument rules have their own tests
			}
			t.Run(arch+"/"+r.Name, func(t *testing.T) {
				want := map[Action]uint32{Refuse: epermRet, NotImplemented: enosysRet, Unsupported: eafnoRet}[r.Action]
				// Arguments must not matter for an unconditional rule.
				for _, args := range [][6]uint64{{}, {^uint64(0), 1, 2, 3, 4, 5}} {
					if got := run(t, v, data{nr: uint32(r.Nr), arch: audit, args: args}); got != want {
						t.Errorf("args %v: got %s, want %s", args, retName(got), retName(want))
					}
				}
			})
		}
	}
}

func TestProgramForeignArch(t *testing.T) {
	foreign := map[string]uint32{
		"i386":    0x40000003,
		"arm":     0x40000028,
		"x86_64":  auditArchX86_64,
		"aarch64": auditArchAARCH64,
		"riscv64": 0xc00000f3,
		"zero":    0,
	}
	for _, arch := range Arches() {
		v := vm(t, arch, Options{})
		for name, audit := range foreign {
			if audit == arches[arch].audit {
				continue
			}
			t.Run(arch+"/"+name, func(t *testing.T) {
				// getpid on every table, and a call refused natively: all die.
				for _, nr := range []uint32{20, 39, 172, 0, 165} {
					if got := run(t, v, data{nr: nr, arch: audit}); got != killRet {
						t.Errorf("nr %d: got %s, want kill", nr, retName(got))
					}
				}
			})
		}
	}
}

func TestProgramX32(t *testing.T) {
	v := vm(t, "amd64", Options{})
	for _, nr := range []uint32{0, 39, 56, 165, 512, 547, 0x3fffffff} {
		d := data{nr: nr | x32BitSyscall, arch: auditArchX86_64}
		if got := run(t, v, d); got != killRet {
			t.Errorf("x32 nr %#x: got %s, want kill", d.nr, retName(got))
		}
	}
	// Above the x32 bit too: any number with bit 30 or higher set.
	if got := run(t, v, data{nr: 0xffffffff, arch: auditArchX86_64}); got != killRet {
		t.Errorf("nr 0xffffffff: got %s, want kill", retName(got))
	}
	// arm64 has no x32 ABI; a large number is just unknown to the kernel.
	v = vm(t, "arm64", Options{})
	if got := run(t, v, data{nr: 172 | x32BitSyscall, arch: auditArchAARCH64}); got != allowRet {
		t.Errorf("arm64 nr %#x: got %s, want allow (the kernel answers ENOSYS)", 172|x32BitSyscall, retName(got))
	}
}

func TestProgramClone(t *testing.T) {
	const sigchld = 17
	cases := []argCase{
		{"fork", sigchld, allowRet},
		{"vfork", 0x4000 | 0x100 | sigchld, allowRet}, // CLONE_VFORK|CLONE_VM
		{"pthread", 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000 | 0x100000 | 0x200000 | 0x80000, allowRet}, // glibc's thread flags
		{"go exec with pidfd", 0x4000 | 0x100 | 0x1000 | sigchld, allowRet},
		{"high word only", 0xffffffff_00000000 | sigchld, allowRet}, // the kernel drops it
		{"CLONE_NEWNS", 0x00020000 | sigchld, epermRet},
		{"CLONE_NEWCGROUP", 0x02000000, epermRet},
		{"CLONE_NEWUTS", 0x04000000, epermRet},
		{"CLONE_NEWIPC", 0x08000000, epermRet},
		{"CLONE_NEWUSER", 0x10000000 | sigchld, epermRet},
		{"CLONE_NEWPID", 0x20000000, epermRet},
		{"CLONE_NEWNET", 0x40000000, epermRet},
		{"all namespaces", cloneNewMask, epermRet},
		{"CLONE_NEWUSER with high bits", 0xffffffff_10000000, epermRet},
	}
	runArgCases(t, sysClone, 0, cases)
	for _, arch := range Arches() {
		v := vm(t, arch, Options{})
		if got := run(t, v, data{nr: uint32(sysClone3.nr(arch)), arch: arches[arch].audit}); got != enosysRet {
			t.Errorf("%s clone3: got %s, want ENOSYS", arch, retName(got))
		}
	}
}

func TestProgramPersonality(t *testing.T) {
	runArgCases(t, sysPersonality, 0, []argCase{
		{"PER_LINUX", 0, allowRet},
		{"ADDR_NO_RANDOMIZE", addrNoRandomize, allowRet},
		{"query", 0xffffffff, allowRet},
		{"query, 64-bit", ^uint64(0), allowRet},
		{"ADDR_NO_RANDOMIZE with high bits", 0x1_00040000, allowRet}, // the kernel takes an unsigned int
		{"PER_LINUX32", 0x0008, epermRet},
		{"READ_IMPLIES_EXEC", 0x0400000, epermRet},
		{"ADDR_NO_RANDOMIZE|READ_IMPLIES_EXEC", 0x0440000, epermRet},
		{"ADDR_COMPAT_LAYOUT", 0x0200000, epermRet},
		{"PER_LINUX32 hidden in high bits", 0xffffffff_00000008, epermRet},
	})
}

func TestProgramIoctl(t *testing.T) {
	runArgCases(t, sysIoctl, 1, []argCase{
		{"TCGETS", 0x5401, allowRet},
		{"TIOCGWINSZ", 0x5413, allowRet},
		{"FIONREAD", 0x541b, allowRet},
		{"TIOCSTI", tiocsti, epermRet},
		{"TIOCLINUX", tioclinux, epermRet},
		{"TIOCSTI with high bits", 0xdead0000_00000000 | tiocsti, epermRet},
		{"TIOCLINUX with high bits", 0x1_00000000 | tioclinux, epermRet},
	})
}

// TestProgramSocket: multipath TCP is refused in every spelling the kernel
// reads as IPPROTO_MPTCP; every other protocol (0, TCP, UDP) passes.
func TestProgramSocket(t *testing.T) {
	runArgCases(t, sysSocket, 2, []argCase{
		{"default protocol", 0, allowRet},
		{"IPPROTO_TCP", 6, allowRet},
		{"IPPROTO_UDP", 17, allowRet},
		{"IPPROTO_MPTCP", ipprotoMPTCP, epermRet},
		{"IPPROTO_MPTCP with high bits", 0xffffffff_00000000 | ipprotoMPTCP, epermRet},
		{"IPPROTO_MPTCP+1", ipprotoMPTCP + 1, allowRet},
	})
}

func TestProgramSetIDModes(t *testing.T) {
	cases := []argCase{
		{"0644", 0644, allowRet},
		{"0755", 0755, allowRet},
		{"sticky 01777", 01777, allowRet},
		{"S_IFREG|0644", 0100644, allowRet},
		{"setuid 04755", 04755, epermRet},
		{"setgid 02755", 02755, epermRet},
		{"both 06755", 06755, epermRet},
		{"S_IFREG|04755", 0104755, epermRet},
		{"setuid with high bits", 0xffff<<48 | 04755, epermRet},
		{"high bits only", 0x4000<<32 | 0644, allowRet}, // the kernel sees 0644
	}
	for _, m := range setidModes {
		t.Run(m.name, func(t *testing.T) {
			for _, arch := range Arches() {
				if m.nr(arch) < 0 {
					continue
				}
				// Only the mode argument matters, so the others are all ones.
				runArgCases(t, m.sysnum, m.arg, cases)
				break
			}
		})
	}
}

// argCase is one value of one argument of a call with an argument rule.
type argCase struct {
	name string
	v    uint64
	want uint32
}

// runArgCases runs s with argument argi set to each case's value (the
// others 1) on every architecture.
func runArgCases(t *testing.T, s sysnum, argi int, cases []argCase) {
	t.Helper()
	for _, arch := range Arches() {
		if s.nr(arch) < 0 {
			continue
		}
		v := vm(t, arch, Options{})
		for _, c := range cases {
			t.Run(arch+"/"+c.name, func(t *testing.T) {
				d := data{nr: uint32(s.nr(arch)), arch: arches[arch].audit, args: [6]uint64{1, 1, 1, 1, 1, 1}}
				d.args[argi] = c.v
				if got := run(t, v, d); got != c.want {
					t.Errorf("%s(arg%d=%#x): got %s, want %s", s.name, argi, c.v, retName(got), retName(c.want))
				}
			})
		}
	}
}

func TestProgramPtraceOption(t *testing.T) {
	for _, arch := range Arches() {
		for _, name := range []string{"ptrace", "process_vm_readv", "process_vm_writev"} {
			var nr int
			for _, s := range refused {
				if s.name == name {
					nr = s.nr(arch)
				}
			}
			d := data{nr: uint32(nr), arch: arches[arch].audit}
			if got := run(t, vm(t, arch, Options{}), d); got != epermRet {
				t.Errorf("%s %s without Ptrace: got %s, want EPERM", arch, name, retName(got))
			}
			if got := run(t, vm(t, arch, Options{Ptrace: true}), d); got != allowRet {
				t.Errorf("%s %s with Ptrace: got %s, want allow", arch, name, retName(got))
			}
		}
		// Ptrace widens nothing else.
		d := data{nr: uint32(sysClone.nr(arch)), arch: arches[arch].audit, args: [6]uint64{0x10000000}}
		if got := run(t, vm(t, arch, Options{Ptrace: true}), d); got != epermRet {
			t.Errorf("%s clone(CLONE_NEWUSER) with Ptrace: got %s, want EPERM", arch, retName(got))
		}
	}
}

func TestProgramUnknownArch(t *testing.T) {
	for _, arch := range []string{"", "386", "riscv64", "AMD64"} {
		if _, err := Program(arch, Options{}); err == nil {
			t.Errorf("Program(%q): got no error, want one", arch)
		}
		if _, err := Rules(arch, Options{}); err == nil {
			t.Errorf("Rules(%q): got no error, want one", arch)
		}
	}
}

func TestEncode(t *testing.T) {
	raw, err := Program("amd64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := Encode(raw)
	if got, want := len(b), 8*len(raw); got != want {
		t.Fatalf("got %d bytes, want %d", got, want)
	}
	for i, r := range raw {
		g := bpf.RawInstruction{
			Op: binary.LittleEndian.Uint16(b[8*i:]), Jt: b[8*i+2], Jf: b[8*i+3],
			K: binary.LittleEndian.Uint32(b[8*i+4:]),
		}
		if g != r {
			t.Fatalf("instruction %d: got %+v, want %+v", i, g, r)
		}
	}
}

// FuzzProgram runs the program over arbitrary seccomp_data: it must never
// fail in the interpreter, and must agree with the oracle, so no listed call
// is ever allowed whatever its arguments or architecture field.
func FuzzProgram(f *testing.F) {
	f.Add(uint8(0), false, uint32(165), uint32(auditArchX86_64), uint64(0), uint64(0))
	f.Add(uint8(0), false, uint32(56), uint32(auditArchX86_64), uint64(0x10000000), uint64(0))
	f.Add(uint8(0), false, uint32(16), uint32(auditArchX86_64), uint64(1), uint64(0xdead000000005412))
	f.Add(uint8(0), false, uint32(135), uint32(auditArchX86_64), uint64(0x40008), uint64(0))
	f.Add(uint8(0), true, uint32(101), uint32(auditArchX86_64), uint64(0), uint64(0))
	f.Add(uint8(0), false, uint32(0x40000027), uint32(auditArchX86_64), uint64(0), uint64(0))
	f.Add(uint8(1), false, uint32(40), uint32(auditArchAARCH64), uint64(0), uint64(0))
	f.Add(uint8(1), false, uint32(220), uint32(auditArchAARCH64), uint64(0x20000000), uint64(0))
	f.Add(uint8(1), false, uint32(435), uint32(auditArchAARCH64), uint64(0), uint64(0))
	f.Add(uint8(1), false, uint32(29), uint32(0x40000028), uint64(0), uint64(0))
	archs := Arches()
	vms := map[string]*bpf.VM{}
	for _, a := range archs {
		for _, p := range []bool{false, true} {
			vms[fmt.Sprint(a, p)] = vm(f, a, Options{Ptrace: p})
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, ptrace bool, nr, audit uint32, a0, a1 uint64) {
		arch := archs[int(which)%len(archs)]
		d := data{nr: nr, arch: audit, args: [6]uint64{a0, a1, a0 ^ a1}}
		got := run(t, vms[fmt.Sprint(arch, ptrace)], d)
		if want := oracle(arch, Options{Ptrace: ptrace}, d); got != want {
			t.Fatalf("%s %+v: got %s, want %s", arch, d, retName(got), retName(want))
		}
		if got == allowRet && d.arch == arches[arch].audit {
			for _, s := range refused {
				if n := s.nr(arch); n >= 0 && uint32(n) == nr && !(s.ptrace && ptrace) {
					t.Fatalf("%s: %s allowed", arch, s.name)
				}
			}
		}
	})
}

func TestProgramSocketFamilies(t *testing.T) {
	const vsock, alg, packet, tipc = 40, 38, 17, 30
	socket := []struct {
		name         string
		family, prot uint64
		want         uint32
	}{
		{"AF_UNIX", 1, 0, allowRet},
		{"AF_INET", 2, 0, allowRet},
		{"AF_INET6", 10, 0, allowRet},
		{"AF_NETLINK route", 16, 0, allowRet},
		{"AF_NETLINK netfilter", 16, 12, eafnoRet},
		{"AF_NETLINK route with high bits", 16, 0xffff << 32, allowRet}, // the kernel sees 0
		{"AF_VSOCK", vsock, 0, eafnoRet},
		{"AF_ALG", alg, 0, eafnoRet},
		{"AF_PACKET", packet, 0, eafnoRet},
		{"AF_TIPC", tipc, 0, eafnoRet},
		{"AF_UNSPEC", 0, 0, eafnoRet},
		{"AF_VSOCK with AF_UNIX in the high word", 1<<32 | vsock, 0, eafnoRet},
		{"AF_UNIX with high bits", 0xdead<<32 | 1, 0, allowRet}, // the kernel sees AF_UNIX
	}
	for _, arch := range Arches() {
		v := vm(t, arch, Options{})
		audit := arches[arch].audit
		for _, c := range socket {
			t.Run(arch+"/socket/"+c.name, func(t *testing.T) {
				d := data{nr: uint32(sysSocket.nr(arch)), arch: audit, args: [6]uint64{c.family, 1, c.prot}}
				if got := run(t, v, d); got != c.want {
					t.Errorf("got %s, want %s", retName(got), retName(c.want))
				}
			})
		}
		for _, c := range []struct {
			name   string
			family uint64
			want   uint32
		}{{"AF_UNIX", 1, allowRet}, {"AF_INET", 2, eafnoRet}, {"AF_TIPC", tipc, eafnoRet}, {"AF_VSOCK", vsock, eafnoRet}} {
			t.Run(arch+"/socketpair/"+c.name, func(t *testing.T) {
				d := data{nr: uint32(sysSocketpair.nr(arch)), arch: audit, args: [6]uint64{c.family, 1}}
				if got := run(t, v, d); got != c.want {
					t.Errorf("got %s, want %s", retName(got), retName(c.want))
				}
			})
		}
	}
}

func TestProgramSetGIDOption(t *testing.T) {
	for _, arch := range Arches() {
		strict, wide := vm(t, arch, Options{}), vm(t, arch, Options{SetGID: true})
		for _, m := range setidModes {
			if m.nr(arch) < 0 {
				continue
			}
			t.Run(arch+"/"+m.name, func(t *testing.T) {
				mode := func(v uint64) data {
					d := data{nr: uint32(m.nr(arch)), arch: arches[arch].audit}
					d.args[m.arg] = v
					return d
				}
				wantGID := epermRet
				if m.gidOK {
					wantGID = allowRet
				}
				for _, c := range []struct {
					name string
					v    *bpf.VM
					mode uint64
					want uint32
				}{
					{"strict setgid", strict, 02775, epermRet},
					{"wide setgid", wide, 02775, wantGID},
					{"wide setuid", wide, 04755, epermRet},
					{"wide both", wide, 06755, epermRet},
					{"wide plain", wide, 0755, allowRet},
				} {
					if got := run(t, c.v, mode(c.mode)); got != c.want {
						t.Errorf("%s %#o: got %s, want %s", c.name, c.mode, retName(got), retName(c.want))
					}
				}
			})
		}
	}
}

func TestAssembleRefusesDuplicateLabel(t *testing.T) {
	var p prog
	p.label("x")
	p.ret(retAllow)
	p.label("x")
	p.ret(retAllow)
	if _, err := p.assemble(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("got %v, want a label defined twice refused", err)
	}
}
