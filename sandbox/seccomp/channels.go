package seccomp

// Channels the box would otherwise share with the host: socket families
// that reach past the box's network namespace, and the host-wide pool of
// native asynchronous I/O contexts.

// Socket families the box may create (linux/socket.h). Everything else is
// answered EAFNOSUPPORT, the kernel's own answer for a family it does not
// have, so programs take the path they take on a kernel built without it.
// AF_VSOCK in particular is not bound to a network namespace: a vsock
// socket in the box would share the virtual machine's port space with the
// host (its hypervisor services, agents listening on VMADDR_CID_ANY).
const (
	afUnix    = 1
	afInet    = 2
	afInet6   = 10
	afNetlink = 16

	// netlinkRoute is NETLINK_ROUTE, the only netlink protocol the box may
	// open: getaddrinfo's AI_ADDRCONFIG and `ip addr` ask it for the box's
	// own interfaces. The others (netfilter's nf_tables above all, a
	// steady source of kernel escapes reachable from a user namespace;
	// xfrm, audit, uevents) stay shut.
	netlinkRoute = 0

	errnoEAFNOSUPPORT = 97
)

// socketFamilies is the allowlist, in the order the filter tests it. The
// in-box init runs under the same filter (Install synchronises every
// thread); its forwarder uses AF_UNIX (the proxy's socket) and AF_INET (its
// loopback listeners), and programs in the box need AF_INET6 as well and
// route netlink for their own interfaces (getaddrinfo, Go's net package).
var socketFamilies = []struct {
	family uint32
	name   string
}{
	{afUnix, "AF_UNIX"}, {afInet, "AF_INET"}, {afInet6, "AF_INET6"}, {afNetlink, "AF_NETLINK"},
}

var (
	// socket is allowed only for the families above (and netlink only
	// for NETLINK_ROUTE). It is refused for IPPROTO_MPTCP as well:
	// Landlock's TCP rules (LANDLOCK_ACCESS_NET_CONNECT_TCP) check only
	// IPPROTO_TCP sockets, so a multipath TCP socket would step around a
	// port rule.
	sysSocket = sysnum{"socket", 41, 198, "", false}
	// socketpair makes connected pairs; only AF_UNIX has them for the
	// box (TIPC has them too, and is refused with the rest).
	sysSocketpair = sysnum{"socketpair", 53, 199, "", false}
)

// aioCalls are native asynchronous I/O (io_setup and friends). Their
// contexts come from one host-wide pool (fs.aio-max-nr): a box that holds
// it makes io_setup fail with EAGAIN for every process on the host. They
// answer ENOSYS, on which glibc's POSIX AIO, libaio users (databases,
// QEMU) and liburing's fallbacks use threads instead.
var aioCalls = []sysnum{
	{"io_setup", 206, 0, "contexts come from the host-wide fs.aio-max-nr pool", false},
	{"io_destroy", 207, 1, "native AIO: no context exists without io_setup", false},
	{"io_getevents", 208, 4, "native AIO: no context exists without io_setup", false},
	{"io_submit", 209, 2, "native AIO: no context exists without io_setup", false},
	{"io_cancel", 210, 3, "native AIO: no context exists without io_setup", false},
	{"io_pgetevents", 333, 292, "native AIO: no context exists without io_setup", false},
}

// channelRules are the rules of this file, for Rules.
func channelRules(arch string, add func(s sysnum, a Action, when, why string)) {
	for _, s := range aioCalls {
		add(s, NotImplemented, "", s.why)
	}
	add(sysSocket, Unsupported, "family not in {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}, or AF_NETLINK with a protocol other than NETLINK_ROUTE",
		"other families reach past the box's network namespace (AF_VSOCK shares the VM's port space)")
	add(sysSocketpair, Unsupported, "family != AF_UNIX", "only Unix socket pairs are needed")
}

// channelDispatch sends the calls of this file to their blocks (emitted by
// channelBlocks); it runs with the call number loaded.
func (p *prog) channelDispatch(arch string) {
	for _, s := range aioCalls {
		p.jumpIf(uint32(s.nr(arch)), "enosys")
	}
	p.jumpIf(uint32(sysSocket.nr(arch)), "socket")
	p.jumpIf(uint32(sysSocketpair.nr(arch)), "socketpair")
}

// channelBlocks emits the argument checks of socket and socketpair. The
// family and the protocol are ints to the kernel: the low word is all of
// each.
func (p *prog) channelBlocks() {
	p.label("socket")
	// Multipath TCP first, whatever the family says (only AF_INET and
	// AF_INET6 have it; the kernel refuses it elsewhere anyway).
	p.load(offArg0 + 16)
	p.jumpIf(ipprotoMPTCP, "eperm")
	p.load(offArg0)
	for _, f := range socketFamilies {
		if f.family == afNetlink {
			p.jumpIf(f.family, "socket-netlink")
			continue
		}
		p.jumpIf(f.family, "socket-allow")
	}
	p.ret(retErrno | errnoEAFNOSUPPORT)
	p.label("socket-netlink")
	p.load(offArg0 + 16)
	p.jumpIfNot(netlinkRoute, "socket-refuse")
	p.label("socket-allow")
	p.ret(retAllow)
	p.label("socket-refuse")
	p.ret(retErrno | errnoEAFNOSUPPORT)

	p.label("socketpair")
	p.load(offArg0)
	p.jumpIfNot(afUnix, "socket-refuse2")
	p.ret(retAllow)
	p.label("socket-refuse2")
	p.ret(retErrno | errnoEAFNOSUPPORT)
}
