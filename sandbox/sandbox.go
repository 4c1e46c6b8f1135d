// Package sandbox describes how a command is confined: the tiers a host can
// give, the Spec a caller asks for, the host probe behind `airlock sandbox
// check` (Probe, and ProbeHost for the value a kernel keeps), Resolve, the
// one place a requested tier (auto included) becomes a concrete one, and
// the Plan that turns a Spec into a box through the Mechanism of its tier
// (tier 1: a bubblewrap invocation with pinned bind sources and protected
// paths). Plan takes concrete tiers only.
//
// It never starts a process: package runner does that with the Box a Plan
// returns. It may be imported by runner, by the CLI and by the daemon; the
// in-box half lives in sandbox/boxinit and shares only sandbox/boxconf.
package sandbox

import (
	"fmt"
	"net"
	"time"

	"github.com/airlock-run/airlock/policy/protected"
)

// Tier is a level of confinement. Higher is stronger.
type Tier int

const (
	// TierAuto asks for the highest tier the host can give.
	TierAuto Tier = -1
	// Tier0 is no confinement: a working directory of its own and an
	// environment built from nothing, with the caller's rights otherwise.
	Tier0 Tier = 0
	// Tier1 is bubblewrap namespaces, a seccomp filter, no capabilities and
	// cgroup limits.
	Tier1 Tier = 1
	// Tier2 is gVisor: the box's system calls go to a kernel of its own.
	Tier2 Tier = 2
)

func (t Tier) String() string {
	if t == TierAuto {
		return "auto"
	}
	return fmt.Sprintf("%d", int(t))
}

// ParseTier reads "auto", "off", "0", "1" or "2".
func ParseTier(s string) (Tier, error) {
	switch s {
	case "auto", "":
		return TierAuto, nil
	case "off", "0", "none":
		return Tier0, nil
	case "1":
		return Tier1, nil
	case "2":
		return Tier2, nil
	}
	return 0, fmt.Errorf("sandbox tier %q: want auto, off, 1 or 2", s)
}

// Spec is what a caller asks of the box. Paths are absolute and already
// resolved by the caller's policy; Plan resolves them again, one component at
// a time, and refuses what does not hold.
type Spec struct {
	// Workdir is the box's working directory. It must exist. It is readable
	// inside the box; it is writable only when Writable is set and Workdir is
	// in (or under) one of Write.
	Workdir string
	// Writable is fix mode. False (observe, the default) binds every path
	// read-only, Write included; only the private /tmp and HOME are writable.
	Writable bool
	// Read are paths bound read-only at the same place inside the box.
	Read []string
	// Write are paths bound writable (in fix mode) at the same place inside
	// the box. Protected paths inside them stay read-only.
	Write []string
	// Env is the box's whole environment, KEY=VALUE. Nothing else is
	// inherited; PWD is added (the working directory) when absent. HOME,
	// when set to an absolute path, is a private tmpfs unless a bind
	// covers it.
	Env []string
	// Limits cover the whole process tree. Zero fields mean no limit.
	Limits Limits
	// Net is the one way out of the box's empty network namespace. Nil means
	// no network at all (loopback only).
	Net *NetSpec
	// Ptrace widens the seccomp filter to allow ptrace. Refused where the
	// host has no Yama ptrace_scope of at least 1.
	Ptrace bool
	// Binds are extra files or directories bound read-only.
	Binds []Bind
	// HomeDir, when set, is a host directory bound writable at HOME (the
	// policy's `sandbox.home: persist`), so the box's home survives the
	// run. It must be a directory outside every writable grant and the
	// working directory. Empty means HOME is a fresh tmpfs.
	HomeDir string
	// PolicyFile is the policy the run was decided by; it stays read-only
	// inside the box even in fix mode. Empty means none.
	PolicyFile string
	// Unprotect takes entries of the protected list off (policy
	// fs.unprotect); each must name an entry (protected.CheckUnprotect).
	Unprotect []string
	// UnattendedBuild holds the build files (Makefile and the like) too:
	// the repository is built by a tool nobody watches (policy
	// fs.unattended_build).
	UnattendedBuild bool
	// Exec is the exec allowlist (Landlock); nil means any program may
	// execute (the policy lists none).
	Exec *ExecSpec
	// Caches are the host caches of the kernel the box is planned for
	// (its /etc views, the probe's readings of bubblewrap and runsc) with
	// the paths that kernel's boxes may write or were let write, which
	// the plan weighs the caches and the host's programs against. Nil
	// keeps no /etc view and passes over the working directory alone. It
	// never crosses a process: a plan is made where its kernel lives.
	Caches *Caches `json:"-"`
	// BindInBox binds the in-box code at InitPath in every tier-1 box,
	// read-only and pinned as elsewhere, even one nothing inside runs:
	// for tests whose probe inside the box is the binary found there (the
	// test binary, given as the airlock binary). airlock itself never
	// sets it.
	BindInBox bool
}

// Limits are resource limits placed on the whole process tree.
type Limits struct {
	// MemoryBytes caps memory (RSS plus page cache charged to the box); 0 is
	// no limit.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// CPU caps CPU time in cores (1.5 = one and a half cores); 0 is no limit.
	CPU float64 `json:"cpu,omitempty"`
	// Wall kills the whole tree after this long (exit 124); 0 is no limit.
	Wall time.Duration `json:"wall,omitempty"`
	// Pids caps the number of tasks (processes and threads, the box's own
	// init included); 0 is no limit.
	Pids int `json:"pids,omitempty"`
}

// NetSpec is the egress proxy the box may reach.
type NetSpec struct {
	// ProxySocket is the host path of the proxy's Unix socket.
	ProxySocket string
	// Token authenticates this box to the proxy; it reaches the box through
	// a descriptor, never argv or environment.
	Token string
	// Serve, when set, is the proxy's accept loop for the box's own
	// forwarder listeners (egress.Proxy.ServeBox), for a proxy in
	// airlock's process: a box whose exec step hands its listeners to the
	// host is then served by the proxy directly. nil hands each of its
	// connections to ProxySocket.
	Serve func(ln net.Listener, mode string) error
}

// Bind is an extra read-only bind of Src (host) at Dst (box). Dst empty means
// the same path.
type Bind struct {
	Src, Dst string
}

// ProtectedNames returns the paths, relative to each writable directory,
// held read-only by name inside the box (policy/protected's list; git's
// files are planned per repository on top of these).
func ProtectedNames() []string { return protectedNames(Spec{}) }

// protectedNames are the list's entries held by name for spec.
func protectedNames(spec Spec) []string {
	return protected.Names(spec.UnattendedBuild, spec.Unprotect, false)
}
