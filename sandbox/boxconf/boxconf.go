// Package boxconf is the protocol between the host side of a box (package
// sandbox plans it, package runner starts it) and the in-box init
// (sandbox/boxinit). It holds only data types: what crosses into the box and
// what comes back.
//
//	runner ──config pipe (JSON, one document, then EOF)──▶ boxinit
//	runner ◀──status pipe (JSON, one document)─────────── boxinit
//
// The exec step of a box without an init reads only its Walls, from one
// pipe too, in an encoding of their own read without reflection
// (EncodeWalls, DecodeWalls): the step runs at the start of every such box.
//
// Both pipes are descriptors inherited through bubblewrap whose numbers are
// flags on boxinit's command line; boxinit marks them close-on-exec before
// the target starts, so the target can read neither. Secrets (the proxy
// token, the environment) travel only in the config pipe, or for the exec
// step of a box without an init in its walls' descriptor (Walls.Env):
// airlock's in-box code starts with no environment of the box's.
package boxconf

// Config is what the in-box init needs.
type Config struct {
	// Argv is the target's command line; Argv[0] is looked up on the PATH of
	// Env when it has no slash.
	Argv []string `json:"argv"`
	// Env is the target's whole environment.
	Env []string `json:"env"`
	// Dir is the target's working directory.
	Dir string `json:"dir"`
	// Seccomp asks for the filter to be installed before the target starts.
	Seccomp bool `json:"seccomp"`
	// Ptrace widens the filter to allow ptrace.
	Ptrace bool `json:"ptrace,omitempty"`
	// Filter is the filter the host compiled (seccomp.Encode), which the
	// init loads as it is when Seccomp is set: the box's filter is the
	// host build's, never the in-box code's own idea of it (an
	// airlock-box of an older build with the same protocol would load an
	// older filter).
	Filter []byte `json:"filter,omitempty"`
	// SetGID lets the filter allow S_ISGID on directories (seccomp.Options).
	SetGID bool `json:"setgid,omitempty"`
	// Net, when set, starts the in-box forwarder to the egress proxy.
	Net *Net `json:"net,omitempty"`
	// StderrFD is the descriptor the target's stderr is, when not the
	// init's own (bubblewrap's stderr is kept apart for its diagnostics).
	StderrFD int `json:"stderr_fd,omitempty"`
	// Pins are binds whose identity the init checks before the target
	// starts: a mount that is not the file the host pinned aborts the run.
	Pins []Pin `json:"pins,omitempty"`
	// Walls, when set, are the Landlock walls the init puts on the target
	// and everything it starts. Nil means none (the kernel has no
	// Landlock).
	Walls *Walls `json:"walls,omitempty"`
	// Proto is the host's Fingerprint; the init refuses another.
	Proto string `json:"proto"`
}

// Walls are the Landlock rules of a box.
type Walls struct {
	// Exec, when set, is the exec wall: only what it lists may be
	// executed. Nil means any program (the policy lists none).
	Exec *Exec `json:"exec,omitempty"`
	// Write, when not nil, is the write wall: files may be written,
	// made, removed and renamed only beneath these box paths, a second
	// wall behind the read-only mounts.
	Write []string `json:"write,omitempty"`
	// Scope keeps the box's processes from signalling, or reaching the
	// abstract Unix sockets of, any process outside the walls (bubblewrap,
	// in a box without an init), where the kernel has Landlock scopes
	// (ABI 6).
	Scope bool `json:"scope,omitempty"`
	// NoExec are the box's writable mount points (with the writable
	// mounts beneath them) that the exec step of a box without an init
	// makes noexec, nosuid and nodev before it drops its capabilities and
	// applies the walls (the init is given them as FlagSeal instead): the
	// dynamic loader maps the file it is given with mmap(PROT_EXEC), which
	// Landlock does not check, and the kernel refuses that mapping (and
	// execve) of a file on a noexec mount. bubblewrap is given
	// CAP_SYS_ADMIN and CAP_SETPCAP (in the box's user namespace only) for
	// this; the in-box code drops both, from the bounding set too.
	NoExec []string `json:"noexec,omitempty"`
	// Seccomp asks the exec step of a box without an init to install
	// airlock's seccomp filter itself, after NoExec (the filter forbids
	// mount calls), instead of bubblewrap's --seccomp. Ptrace is the
	// filter's option.
	Seccomp bool `json:"seccomp,omitempty"`
	Ptrace  bool `json:"ptrace,omitempty"`
	// Filter is the host's filter the step loads (Config.Filter).
	Filter []byte `json:"filter,omitempty"`
	// Access is what the host's Landlock code handles for these walls on
	// this kernel (landlock.Handled, "FS SCOPED" in hexadecimal). The
	// in-box code builds the ruleset itself, from paths only it can open,
	// and refuses walls its own build would handle otherwise: an
	// airlock-box of another build with the same protocol would put
	// other walls on the box than the host planned and reports.
	Access string `json:"access,omitempty"`
	// SetGID is the filter's set-group-ID option (Config.SetGID).
	SetGID bool `json:"setgid,omitempty"`
	// Proto is the host's Fingerprint, set when the walls are the exec
	// step's only configuration (FlagExecWall); the step refuses another.
	Proto string `json:"proto,omitempty"`
	// Env is the command's whole environment, for the exec step of a
	// box without an init (Proto set). bubblewrap starts the step with
	// none: the box's environment is the policy's for its programs, and
	// in the step, which runs before the walls and the filter (with the
	// seal's capability), an LD_PRELOAD or LD_LIBRARY_PATH would have the
	// dynamic loader run a library the box names, and a GODEBUG would
	// steer its Go runtime.
	Env []string `json:"env,omitempty"`
	// Listen, when set, asks the exec step of a box without an init to
	// make the egress forwarder's loopback listeners in the box's network
	// namespace and hand them to the host, which serves them (see Listen).
	Listen *Listen `json:"listen,omitempty"`
}

// Listen is how the exec step of a box with network and no init hands the
// forwarder's listeners out. Descriptor FD is one end of a SOCK_SEQPACKET
// Unix socket pair whose other end airlock holds on the host:
//
//	host ──one byte: 'm' (the proxy serves models) or '-'──▶ exec step
//	host ◀──"http socks" with both listeners as SCM_RIGHTS── exec step
//	        (then " BEGAN SENT" when Trace is set)
//
// The host writes its byte before bubblewrap starts, so the exec step never
// waits on it. The exec step closes its listeners and FD before it executes
// the command: the box keeps no listener of its own, and its only way out
// stays the two loopback ports, now accepted by airlock on the host.
type Listen struct {
	FD        int `json:"fd"`
	HTTPPort  int `json:"http_port"`
	SOCKSPort int `json:"socks_port"`
	// Exe and ConnectExe are the airlock binary inside the box, as in Net.
	Exe        string `json:"exe"`
	ConnectExe string `json:"connect_exe"`
	// Trace asks the exec step to add to its words when it began and when
	// it sent (CLOCK_MONOTONIC nanoseconds), for airlock's start trace.
	Trace bool `json:"trace,omitempty"`
}

// ListenModels and ListenPlain are the host's byte on a Listen socket.
const (
	ListenModels = 'm'
	ListenPlain  = '-'
)

// Exec is the exec allowlist the in-box init applies with Landlock before
// the target starts.
type Exec struct {
	// Paths are box paths that may be executed: a file, or a directory
	// for everything beneath it. A path missing inside the box is left
	// out (what does not exist cannot run).
	Paths []string `json:"paths"`
	// Hide are the directories of programs (the box's PATH): a file in
	// one that Paths does not list may not even be read,
	// so the dynamic loader cannot load it as its argument. Empty: only
	// execution is walled.
	Hide []string `json:"hide,omitempty"`
}

// Net configures the in-box forwarder.
type Net struct {
	Socket    string `json:"socket"` // the proxy's socket, as seen inside the box
	Token     string `json:"token"`
	HTTPPort  int    `json:"http_port"`
	SOCKSPort int    `json:"socks_port"`
	// Exe and ConnectExe are the airlock binary inside the box, under its
	// own name and as airlock-connect (git's proxy command).
	Exe        string `json:"exe"`
	ConnectExe string `json:"connect_exe"`
	// Copy: the forwarder carries the bytes itself (tier 2, whose
	// sockets cannot be passed to the host).
	Copy bool `json:"copy,omitempty"`
}

// Pin is the device and inode a bind destination must have inside the box.
type Pin struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// Status is what the init reports when the target has ended or could not
// start: one JSON document per line, the last one counting: one when the
// target has started, one when it has ended or could not start.
type Status struct {
	// Started is true once the target was started.
	Started bool `json:"started"`
	// Done marks the init's last report. A report with Started and not
	// Done means the init died after starting the target (the memory
	// limit's OOM killer, a SIGKILL from outside).
	Done bool `json:"done,omitempty"`
	// Exit is the target's exit status when it exited normally.
	Exit int `json:"exit"`
	// Signal is the signal that ended the target, 0 if none.
	Signal int `json:"signal,omitempty"`
	// Error says why the init could not run the target (nothing ran).
	Error string `json:"error,omitempty"`
	// NotFound marks an Error that is a missing command.
	NotFound bool `json:"not_found,omitempty"`
	// Seccomp reports whether the filter was installed.
	Seccomp bool `json:"seccomp"`
}

// Flag names on the init's command line.
const (
	FlagConfig = "--config-fd"
	FlagStatus = "--status-fd"
	// FlagExecWall selects the exec step of a box without an init
	// (bubblewrap starts the command itself): `InitArg --exec-wall-fd N
	// -- argv...` reads Walls (EncodeWalls) from descriptor N, applies
	// them and executes argv in its own place.
	FlagExecWall = "--exec-wall-fd"
	// FlagSeal, before the init's other flags and repeated, names one
	// mount point of the box to make noexec (see Walls.NoExec): the init
	// seals them with the capabilities bubblewrap gave it, drops those
	// from the thread that did it and executes itself again from there
	// without the flag, so no thread of the init keeps a capability.
	FlagSeal = "--seal"
)
