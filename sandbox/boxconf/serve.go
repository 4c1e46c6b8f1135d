package boxconf

// The warm box: the same init, started once per box, serves calls over a
// Unix stream socket handed in at start (FlagServe) instead of running one
// target. The configuration pipe still brings the box's Config (Argv
// empty); then:
//
//	runner ◀──Ready (one JSON line)──────────────────────────── init
//	runner ──Call: 4-byte big-endian length, JSON; with it, ──▶ init
//	         SCM_RIGHTS: the call's stdin, stdout, stderr
//	runner ◀──CallDone (one JSON line, kind "done") once every ── init
//	          process in the box has ended: the call's output
//	          pipes are closed, its Result is complete
//	runner ──NetReleased (one byte), a box with network only: ──▶ init
//	          every connection of the call is closed and the
//	          listeners' queues are empty
//	runner ◀──BoxClear (one JSON line, kind "clear") once the ─── init
//	          init has put back its standing, checked the
//	          network namespace and emptied the scratch
//	          directories; only then may the next Call come
//
// A warm box with network (Walls.Listen set) makes the forwarder's two
// loopback listeners once, before Ready, and hands them to the host over
// Listen.FD as the exec step of a cold box does, without the host's byte
// (whether the proxy serves models is each call's: Call.Models). The host
// accepts on them only while a call runs, for that call's egress proxy;
// between calls it accepts nothing and closes whatever is queued. The
// init tells the listeners apart from anything a call left in the network
// namespace by their socket inodes, and a box with anything else left, or
// without both listeners, is dirty.
//
// Calls are one at a time: the runner returns a call's result at its
// CallDone and makes the box idle again only at a BoxClear that says it is
// clear. A line of another kind than the one due, a BoxClear that is dirty,
// or none at all, retires the box. The socket is marked close-on-exec and
// is never among a call's descriptors; the init is not dumpable, so no call
// reaches it through /proc/1/fd either.

// Flags of the serving mode on the init's command line, after FlagConfig
// and FlagStatus.
const (
	// FlagServe names the descriptor of the control socket.
	FlagServe = "--serve-fd"
	// FlagScratch, repeated, names a directory of the box (a tmpfs of its
	// own) emptied after every call: /tmp, /var/tmp, /dev/shm, a private
	// HOME.
	FlagScratch = "--scratch"
	// FlagResetPids, alone after InitArg, is not a box's init: the runner
	// starts it once in a warm box's PID namespace, and between calls, for
	// each byte it reads, it sets that namespace's last PID back to 1
	// (ns_last_pid), so the next call is given the process ids the first
	// was.
	FlagResetPids = "--reset-pids"
)

// MaxCall bounds one Call's encoding: argv and environment together are
// bounded by the kernel's own ARG_MAX well below this.
const MaxCall = 8 << 20

// Ready is the init's first line on the control socket: the box is set up
// (walls, filter) and waits for calls, or Error says why not.
type Ready struct {
	Ready bool   `json:"ready"`
	Error string `json:"error,omitempty"`
	// Seccomp reports whether the filter was installed.
	Seccomp bool `json:"seccomp"`
}

// Call is one command to run in a warm box.
type Call struct {
	// Argv is the command line; Argv[0] is looked up on the PATH of Env.
	Argv []string `json:"argv"`
	// Env is the whole environment of the call, built from nothing.
	Env []string `json:"env"`
	// Dir is the call's working directory.
	Dir string `json:"dir"`
	// WallMS is the wall-clock limit in milliseconds; 0 is none.
	WallMS int64 `json:"wall_ms,omitempty"`
	// Models, in a box with network, says the call's egress proxy serves
	// models: the model SDKs' variables are set to reach it.
	Models bool `json:"models,omitempty"`
}

// NetReleased is the runner's byte, after a CallDone of a box with
// network, saying every connection of the call is closed and nothing is
// queued on the listeners.
const NetReleased = 'r'

// The kinds of the init's reports on a call, in the order they come.
const (
	KindDone  = "done"
	KindClear = "clear"
)

// CallDone is how a call ended.
type CallDone struct {
	// Kind is KindDone.
	Kind string `json:"kind"`
	// Started is set when the command was started.
	Started bool `json:"started"`
	Exit    int  `json:"exit"`
	Signal  int  `json:"signal,omitempty"`
	// WallTimeout is set when the wall-clock limit ended the call.
	WallTimeout bool `json:"wall_timeout,omitempty"`
	// Error says why the command could not start (nothing ran).
	Error string `json:"error,omitempty"`
	// NotFound marks an Error that is a missing command.
	NotFound bool `json:"not_found,omitempty"`
	// Refused marks the exec wall's refusal of the command itself (126).
	Refused bool `json:"refused,omitempty"`
	// Dirty says why the call's end could not be learned (waiting for
	// it failed): the box must not serve another call, and no BoxClear
	// follows.
	Dirty string `json:"dirty,omitempty"`
	// StartUS is how long, in microseconds, the init took from the
	// call's arrival to its process's start (look-up, fork, exec); RunUS
	// from then until every process in the box had ended. They tell where
	// a warm call's time goes; nothing is decided by them.
	StartUS int64 `json:"start_us,omitempty"`
	RunUS   int64 `json:"run_us,omitempty"`
}

// BoxClear is the init's second report on a call: the box is brought back
// to its first state, or Dirty says what of the call could not be cleared
// away and the box must not serve another call.
type BoxClear struct {
	// Kind is KindClear.
	Kind  string `json:"kind"`
	Dirty string `json:"dirty,omitempty"`
}
