// Package wiring builds airlock's kernel from what a command line names: the
// policy file (or the built-in workspace profile), the working directory and
// mode, the person who answers escalations (a terminal, the approvals
// socket), the grants file and the audit log. `airlock run` and the MCP
// server and gateway share it, so every entry point is mediated the same
// way. Only internal/cli imports it.
package wiring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/offload"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// DefaultPolicyFile is the policy read from the working directory when none
// is named.
const DefaultPolicyFile = "airlock.yaml"

// Config is what the command line said.
type Config struct {
	// PolicyFile names the policy; "" reads airlock.yaml in Workdir when it
	// exists and uses the built-in workspace profile otherwise.
	PolicyFile string
	// Workdir is the working directory of the calls; "" is Dir.
	Workdir string
	// Dir is the caller's own working directory, against which relative
	// paths on the command line are read.
	Dir string
	// Mode is "observe" (also "") or "fix".
	Mode string
	// Getenv reads the caller's environment.
	Getenv func(string) string
	// Terminal, when true, puts escalations to a person on /dev/tty.
	Terminal bool
	// OpenTerminal opens the terminal Terminal names; nil opens /dev/tty
	// (approvals.OpenTerminal). `airlock warm` opens the caller's own,
	// which it received: never the server's.
	OpenTerminal func() (*os.File, error)
	// BrokerPid names the approvals socket and prefixes escalation IDs
	// (approvals.Options.Pid); 0 is this process's pid. `airlock warm`
	// gives each call its caller's, as the caller's own kernel would have.
	BrokerPid int
	// AuditFile is the audit log; "" is audit.DefaultPath.
	AuditFile string
	// GrantsFile is where "allow always" saves; "" is the default path.
	GrantsFile string
	// TraceFile, when set, also sends every audit record as an
	// OpenTelemetry span to that file (JSON, one span per record).
	TraceFile string
	// ReportFile is the file the front end will write a report to after
	// the call (airlock run --report); "" means none. Build only checks it:
	// it must lie outside every path the policy lets a box write.
	ReportFile string
	// StoreDir is the file store's directory the front end opens; ""
	// means it opens none. A box may never write it.
	StoreDir string
	// PinsDir is the directory of the pinned tool definitions the front
	// end keeps (airlock mcp wrap); "" means it keeps none. A box may
	// never write it: a pin decides whether a changed definition needs a
	// person.
	PinsDir string
	// CacheDir holds the host's caches (the probe's answer and the box's
	// /etc views); "" is airlock's state directory. A node gives all its
	// jobs its own state directory: each job has a HOME of its own, and
	// caches under it would be built afresh for every job. A box may never
	// write it.
	CacheDir string
	// Log receives diagnostics; nil drops them.
	Log *slog.Logger

	// Tier, Exe, Environ, Warn, OutputCap, Offloader, Scope and AfterDecide
	// are the kernel's (mediator.Options): how it runs, fits and offloads
	// what it allowed.
	Tier        sandbox.Tier
	Exe         string
	Environ     []string
	Warn        func(string)
	OutputCap   int64
	Offloader   *offload.Offloader
	Scope       files.Scope
	AfterDecide func(mediator.Call)
	// Taint is the kernel's (mediator.Options.Taint): why the caller read
	// text from outside, "" for none.
	Taint func() string
	// Early, when set, is the policy read ahead for this configuration
	// (ReadEarly); nil reads it in Build.
	Early *Early
	// AuditTails is the audit log's last-line cache of a process that
	// opens the log for many runs (`airlock warm`); nil parses the last
	// record at every open.
	AuditTails *audit.TailCache
}

// Kernel is a built kernel with what it was built from.
type Kernel struct {
	*mediator.Kernel
	Policy *policy.Policy
	World  policy.World
	// PolicyFile is the file the policy came from; "" for the built-in one.
	PolicyFile string
	Audit      *audit.Log
	Broker     *approvals.Broker
	// Private is every file and directory airlock writes on the host for
	// this kernel (see Private); the mediator refuses a box that may
	// write one of them.
	Private []string
	// BoxWritable is every path a box under this policy may write in fix
	// mode, whatever the mode of this kernel: a file a front end names for
	// one call (a report) goes through privfile with it, since an earlier
	// run may have planted links there.
	BoxWritable []string
	// Caches are the kernel's host caches (the probe's, the /etc views)
	// with the paths its boxes may write or were let write; its own
	// boxes and probes use them (Caches.Probe).
	Caches  *sandbox.Caches
	closers []io.Closer
}

// Close releases the broker's socket, the terminal and the audit log.
func (k *Kernel) Close() error {
	var err error
	for i := len(k.closers) - 1; i >= 0; i-- {
		err = errors.Join(err, k.closers[i].Close())
	}
	return err
}

// Build loads the policy and wires the kernel. Any failure is an error and
// nothing is decided: an invalid policy never falls back to a default.
func Build(cfg Config) (*Kernel, error) {
	defer starttrace.Begin("kernel-build")()
	if cfg.Getenv == nil {
		cfg.Getenv = func(string) string { return "" }
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	workdir, err := Workdir(cfg.Dir, cfg.Workdir)
	if err != nil {
		return nil, err
	}
	mode := policy.Observe
	switch cfg.Mode {
	case "", "observe":
	case "fix":
		mode = policy.Fix
	default:
		return nil, errs.Invalidf("--mode %q: want observe or fix", cfg.Mode)
	}
	endPolicy := starttrace.Begin("policy-load")
	p, file, err := cfg.Early.loadPolicy(cfg, workdir)
	endPolicy()
	if err != nil {
		return nil, err
	}
	if mode == policy.Fix && len(p.FS.Write) == 0 {
		return nil, errs.Invalidf("--mode fix: the policy grants no writes (add paths to fs.write in %s)", nonEmpty(file, "the policy"))
	}

	k := &Kernel{Policy: p, PolicyFile: file}
	fail := func(err error) (*Kernel, error) { k.Close(); return nil, err }

	paths, err := privatePaths(cfg)
	if err != nil {
		return fail(err)
	}
	k.Private = paths.list()
	k.World = World(workdir, cfg.Getenv("HOME"), mode)
	// Commands run in a box of their own unless the person asked for none
	// or the policy's isolation is none: then the box ends what a command
	// leaves running, and its /tmp is its own. A requested tier the host
	// cannot give runs nothing, so it is a box too.
	k.World.Box = cfg.Tier != sandbox.Tier0 && p.Isolation != "none"
	if k.BoxWritable, err = BoxWritable(p, k.World); err != nil {
		return fail(err)
	}
	// Refuse before anything is opened, let alone run: in fix mode the box
	// may write its paths now, so none of airlock's files may lie there;
	// the files named for this call only (the trace, the report, the MCP
	// pins, which another run of the policy does not know of) may not
	// lie where any run of this policy may write, in any mode.
	var thisRun []string
	if mode == policy.Fix {
		thisRun = k.BoxWritable
	}
	if err := checkPrivate(k.Private, thisRun); err != nil {
		return fail(err)
	}
	if err := checkPrivate(nonEmptyList(paths.trace, paths.report, paths.pins), k.BoxWritable); err != nil {
		return fail(err)
	}
	// Before any box may write them: a later run must know that a policy
	// file below these paths may be a box's (see trust.go).
	if mode == policy.Fix {
		for _, rec := range nonEmptyList(paths.written, paths.sharedWritten) {
			if err := recordBoxWritable(rec, k.BoxWritable); err != nil {
				return fail(err)
			}
		}
	}

	// The probe's cache and the views lie among the private paths just
	// checked: no box of this policy may write them. They, and the host's
	// own programs (bubblewrap, runsc, found on PATH; airlock-box), are
	// never taken from where a box may write now or an earlier box was
	// let write. The list is this kernel's: a process (a node) builds a
	// kernel per job, each job's boxes weighed against its own.
	written, err := loadBoxWritable(paths.written)
	if err != nil {
		return fail(err)
	}
	// And what any kernel sharing the caches recorded (a node's other
	// jobs, each with a HOME and record of its own, in this process or
	// an earlier one): a program one planted is the host's for all.
	if paths.sharedWritten != "" {
		shared, err := loadBoxWritable(paths.sharedWritten)
		if err != nil {
			return fail(err)
		}
		// One that no longer exists holds nothing a box planted (a
		// finished job's directory, removed): left out, so the list
		// weighed at every plan stays the size of what is there.
		for _, w := range shared {
			if _, err := os.Lstat(w); err == nil {
				written = append(written, w)
			}
		}
	}
	k.Caches = sandbox.NewCaches(sandbox.CacheConfig{ProbeFile: paths.probe, EtcViewDir: paths.etcView,
		BoxWritable: append(append([]string(nil), thisRun...), written...)})

	grants, err := approvals.LoadGrants(paths.grants)
	if err != nil {
		return fail(err)
	}
	if len(grants) > 0 {
		p = p.WithGrants(grants)
		k.Policy = p
	}

	endAudit := starttrace.Begin("audit-open")
	// Its last record is read beside the rest of the wiring, and waited
	// for below: a log that cannot be chained onto still fails Build.
	k.Audit, err = audit.Open(paths.audit, audit.Options{BoxWritable: thisRun, TailLater: true, Tails: cfg.AuditTails})
	endAudit()
	if err != nil {
		return fail(err)
	}
	k.closers = append(k.closers, k.Audit)
	var sink audit.Sink = k.Audit
	if paths.trace != "" {
		// Appended to by root, at a path the caller's environment names:
		// never through a link, a hard link or a box's directory.
		f, err := privfile.OpenAppend(paths.trace, os.O_WRONLY, 0o600, privfile.Options{BoxWritable: k.BoxWritable})
		if err != nil {
			return fail(errs.Wrap(errs.Unavailable, err, "trace file"))
		}
		tracer, shutdown, err := audit.WriterTracingEnv(f, cfg.Getenv)
		if err != nil {
			f.Close()
			return fail(errs.Wrap(errs.Unavailable, err, "trace file"))
		}
		k.closers = append(k.closers, f, closerFunc(func() error { return shutdown(context.Background()) }))
		sink = audit.Traced(k.Audit, tracer)
	}

	bo := approvals.Options{SocketDir: paths.socketDir, GrantsFile: paths.grants,
		Log: log, Audit: k.Audit, Pid: cfg.BrokerPid}
	if cfg.Terminal {
		open := cfg.OpenTerminal
		if open == nil {
			open = approvals.OpenTerminal
		}
		if tty, err := open(); err == nil {
			bo.Terminal = tty
			k.closers = append(k.closers, tty)
		}
	}
	if k.Broker, err = approvals.New(bo); err != nil {
		return fail(err)
	}
	k.closers = append(k.closers, k.Broker)

	if k.Kernel, err = mediator.New(p, k.World, mediator.Options{
		Approver: brokerApprover{b: k.Broker, workdir: workdir},
		Recorder: auditRecorder{l: sink, log: deferrable(sink, k.Audit)},
		Private:  k.Private,
		Tier:     cfg.Tier, Exe: cfg.Exe, Environ: cfg.Environ, Warn: cfg.Warn, OutputCap: cfg.OutputCap,
		Offloader: cfg.Offloader, Scope: cfg.Scope, AfterDecide: cfg.AfterDecide,
		Taint: cfg.Taint, Caches: k.Caches,
	}); err != nil {
		return fail(err)
	}
	// Closed first: nothing New started beside the front end (the host's
	// probe, which writes the probe cache) outlives the kernel.
	k.closers = append(k.closers, closerFunc(func() error { k.Kernel.Settle(); return nil }))
	if err := k.Audit.Ready(); err != nil {
		return fail(err)
	}
	return k, nil
}

// hostPaths are the places airlock itself writes on the host for one
// kernel, absolute; "" for what this kernel does not write.
type hostPaths struct {
	grants, audit, socketDir, trace, report, store, pins string
	// probe is the host probe's cache, etcView the directory of the
	// box's /etc views (sandbox.CacheConfig).
	probe, etcView string
	// trusted is the person's trusted policies, written is the record of
	// paths granted to boxes (trust.go).
	trusted, written string
	// sharedWritten is the record of paths granted to the boxes of every
	// kernel given the same cache directory (a node's jobs), beside the
	// caches; "" when it is written itself.
	sharedWritten string
}

func (h hostPaths) list() []string {
	return nonEmptyList(h.grants, h.audit, h.socketDir, h.trace, h.report, h.store, h.pins, h.trusted, h.written, h.sharedWritten, h.probe, h.etcView)
}

// privatePaths resolves cfg's paths and their defaults.
func privatePaths(cfg Config) (hostPaths, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = func(string) string { return "" }
	}
	abs := func(p string) string {
		if p != "" && !filepath.IsAbs(p) {
			p = filepath.Join(cfg.Dir, p)
		}
		if p != "" {
			p = filepath.Clean(p)
		}
		return p
	}
	h := hostPaths{grants: abs(cfg.GrantsFile), audit: abs(cfg.AuditFile),
		socketDir: abs(approvals.DefaultSocketDir(cfg.Getenv)),
		trace:     abs(cfg.TraceFile), report: abs(cfg.ReportFile), store: abs(cfg.StoreDir),
		pins: abs(cfg.PinsDir)}
	var err error
	if h.grants == "" {
		if h.grants, err = approvals.DefaultGrantsPath(cfg.Getenv); err != nil {
			return h, err
		}
	}
	if h.audit == "" {
		if h.audit, err = audit.DefaultPath(cfg.Getenv); err != nil {
			return h, err
		}
	}
	if c := abs(cfg.CacheDir); c != "" {
		h.probe, h.etcView = filepath.Join(c, ProbeCacheFile), filepath.Join(c, EtcViewDir)
	} else if state, err := audit.DefaultPath(cfg.Getenv); err == nil {
		h.probe = filepath.Join(filepath.Dir(state), ProbeCacheFile)
		h.etcView = filepath.Join(filepath.Dir(state), EtcViewDir)
	}
	if h.trusted, err = TrustedPath(cfg.Getenv); err != nil {
		return h, err
	}
	if h.written, err = BoxWritableRecordPath(cfg.Getenv); err != nil {
		return h, err
	}
	if h.probe != "" {
		if s := filepath.Join(filepath.Dir(h.probe), filepath.Base(h.written)); s != h.written {
			h.sharedWritten = s
		}
	}
	return h, nil
}

// ProbeCacheFile is the host probe's cache, in airlock's state directory
// beside the default audit log.
const ProbeCacheFile = "probe-cache.json"

// EtcViewDir holds the box's /etc views (sandbox.CacheConfig), in
// airlock's state directory beside the default audit log.
const EtcViewDir = "etc-views"

// Private is every file and directory airlock writes on the host for cfg:
// the grants file, the audit log, the approvals socket's directory, the
// trace file, the report file, the file store and the MCP pins, each when
// cfg has one, the trusted policies, the record of box-writable paths and
// the host probe's cache and the /etc views.
// It is the one list the mediator checks a box's writable paths against,
// whichever front end (run, mcp serve, mcp wrap) built the kernel.
func Private(cfg Config) ([]string, error) {
	h, err := privatePaths(cfg)
	if err != nil {
		return nil, err
	}
	return h.list(), nil
}

// BoxWritable is every existing path a box under p may write in fix mode,
// absolute, in w.
func BoxWritable(p *policy.Policy, w policy.World) ([]string, error) {
	return mediator.BoxWritable(p, w)
}

// checkPrivate is the kernel's one check of airlock's own paths against
// what a box may write.
func checkPrivate(private, writable []string) error { return mediator.CheckPrivate(private, writable) }

func nonEmptyList(s ...string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Workdir resolves the working directory: absolute, cleaned, an existing
// directory.
func Workdir(dir, workdir string) (string, error) {
	if workdir == "" {
		workdir = dir
	}
	if !filepath.IsAbs(workdir) {
		workdir = filepath.Join(dir, workdir)
	}
	workdir = filepath.Clean(workdir)
	st, err := os.Stat(workdir)
	if err != nil {
		return "", errs.Wrap(errs.Invalid, err, "working directory %s", workdir)
	}
	if !st.IsDir() {
		return "", errs.Invalidf("working directory %s is not a directory", workdir)
	}
	return workdir, nil
}

// LoadPolicy reads the named policy file, or airlock.yaml in workdir, or
// returns the built-in workspace profile when there is neither. A file is
// in force only when its content is trusted or, failing that, it asks for
// no less confinement than the trusted one (trust.go); getenv locates the
// trusted list, the record of box-writable paths and HOME.
func LoadPolicy(dir, workdir, file string, getenv func(string) string) (*policy.Policy, string, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	explicit := file != ""
	if !explicit {
		file = filepath.Join(workdir, DefaultPolicyFile)
	} else if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	data, err := os.ReadFile(file)
	// An empty default file is the placeholder a running box keeps over a
	// policy file that does not exist yet: it is no policy at all.
	if !explicit && (errors.Is(err, fs.ErrNotExist) || err == nil && len(bytes.TrimSpace(data)) == 0) {
		return policy.Workspace(), "", nil
	}
	if err != nil {
		return nil, "", errs.Wrap(errs.Invalid, err, "policy")
	}
	p, err := parseKept(file, data)
	if err != nil {
		return nil, "", err
	}
	c := trustCheck{file: filepath.Clean(file), data: data, workdir: workdir, home: getenv("HOME")}
	if path, err := TrustedPath(getenv); err == nil {
		if c.trusted, err = LoadTrusted(path); err != nil {
			return nil, "", err
		}
	}
	if path, err := BoxWritableRecordPath(getenv); err == nil {
		if c.written, err = loadBoxWritable(path); err != nil {
			return nil, "", err
		}
	}
	if err := checkTrust(p, c); err != nil {
		return nil, "", err
	}
	return p, file, nil
}

// parsed are the policies this process parsed, by file name and exact
// bytes. policy.Parse reads nothing else (the package does no I/O), and a
// Policy is never changed once made (WithGrants and Narrow make new
// ones), so a process that builds a kernel per call (a per-user server)
// parses a policy once until its bytes change. What the policy says of
// the host (its paths resolved, its trust) is read afresh by every build:
// only the parse is kept. The bytes themselves are the key (a hash of
// them would cost a cold start, which parses once, more than it saves).
var parsed struct {
	sync.Mutex
	m map[parsedKey]*policy.Policy
}

type parsedKey struct{ file, data string }

// Bounds on parsed: a process reading more policies than maxParsed starts
// the cache afresh; a policy file over maxParsedBytes is parsed every time.
const (
	maxParsed      = 64
	maxParsedBytes = 64 << 10
)

// parseKept is policy.Parse through parsed.
func parseKept(file string, data []byte) (*policy.Policy, error) {
	if len(data) > maxParsedBytes {
		return policy.Parse(file, data)
	}
	parsed.Lock()
	p, ok := parsed.m[parsedKey{file, string(data)}]
	parsed.Unlock()
	if ok {
		return p, nil
	}
	p, err := policy.Parse(file, data)
	if err != nil {
		return nil, err
	}
	parsed.Lock()
	if parsed.m == nil || len(parsed.m) >= maxParsed {
		parsed.m = map[parsedKey]*policy.Policy{}
	}
	parsed.m[parsedKey{file, string(data)}] = p
	parsed.Unlock()
	return p, nil
}

// World is what the policy needs to know about the machine: symlinks are
// resolved on the host, programs are looked up on the box's PATH.
func World(workdir, home string, mode policy.Mode) policy.World {
	return policy.World{
		Workdir:  workdir,
		Home:     home,
		Mode:     mode,
		PATH:     strings.Split(mediator.BoxPATH, ":"),
		Resolve:  mediator.Resolve,
		LookPath: lookPath,
	}
}

// lookPath finds the program a bare name runs in the box: the box binds
// the system's program directories, so the host's files on the box's PATH
// are the box's.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return "", fmt.Errorf("%q is not a bare program name", name)
	}
	return sandbox.LookPath(name, mediator.BoxPATH, "/")
}

// brokerApprover puts the kernel's escalations to the approvals broker.
type brokerApprover struct {
	b       *approvals.Broker
	workdir string
}

func (a brokerApprover) Ask(ctx context.Context, e mediator.Escalation) mediator.Reply {
	req := approvals.Request{
		Kind: string(e.Call.Kind), Argv: e.Call.Argv, Command: e.Call.Command,
		Tool: e.Call.Tool, Args: e.Call.Args, Category: string(e.Decision.Category),
		Rule: e.Decision.Rule, Reason: e.Decision.Reason, Workdir: a.workdir, Grant: e.Grant, NoGrant: e.NoGrant,
	}
	switch e.Call.Kind {
	case mediator.KindExec:
		req.Kind = "argv"
	case mediator.KindRead, mediator.KindWrite:
		req.Kind, req.Argv = "fs", []string{string(e.Call.Kind), e.Call.Path}
	case mediator.KindNet:
		req.Argv = []string{fmt.Sprintf("%s:%d", e.Call.Host, e.Call.Port)}
	}
	o := a.b.Ask(ctx, req, e.Timeout)
	r := mediator.Reply{Decider: o.Decider, Err: o.Err, Grant: o.Grant}
	switch o.Answer {
	case approvals.AllowOnce:
		r.Answer = mediator.AnswerAllowOnce
	case approvals.AllowAlways:
		r.Answer = mediator.AnswerAllowAlways
	case approvals.Deny:
		r.Answer = mediator.AnswerDeny
	case approvals.Timeout:
		r.Answer = mediator.AnswerTimeout
	default:
		r.Answer = mediator.AnswerError
	}
	return r
}

// auditRecorder keeps the kernel's records in the hash-chained log.
type auditRecorder struct {
	l audit.Sink
	// log, when set, is l itself: the log whose fsync of an allowed
	// command's decision may run beside the box's start (Kernel.Exec).
	log *audit.Log
}

// deferrable is log when the sink is the log itself; a sink that also
// traces records every Append as it comes.
func deferrable(sink audit.Sink, log *audit.Log) *audit.Log {
	if l, ok := sink.(*audit.Log); ok && l == log {
		return log
	}
	return nil
}

// syncAfter is the context key of a call whose records Kernel.Exec makes
// durable (audit.Log.Sync) before it returns anything; its value is the
// call's *pendingRecords.
type syncAfter struct{}

// pendingRecords are the allowed decisions of one Kernel.Exec being
// written beside the box's plan (audit.Log.AppendAsync).
type pendingRecords struct {
	mu      sync.Mutex
	written []func() error
	// started is set once wait ran: the box may be running, and nothing
	// waits for a record given after it before what it allows goes ahead.
	started bool
}

// add takes record r to be written beside the box's plan, and reports
// false once the box may have started: r must then be written before
// what it allows goes ahead, by the caller.
func (p *pendingRecords) add(log *audit.Log, r audit.Record) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return false
	}
	p.written = append(p.written, log.AppendAsync(r))
	return true
}

// wait returns once every record is in the file, or with the first that
// could not be written.
func (p *pendingRecords) wait() error {
	p.mu.Lock()
	ws := p.written
	p.started = true
	p.mu.Unlock()
	for _, w := range ws {
		if err := w(); err != nil {
			return errs.Wrap(errs.Unavailable, err, "audit: the decision could not be recorded, so the command was not started")
		}
	}
	return nil
}

// Exec is the kernel's Exec (mediator.Kernel.Exec) with the records taken
// off the start's path: the allowed decision's is encoded and written
// beside the box's plan, and the box starts only once it is in the file
// (ExecOptions.BeforeStart), so a run airlock did not live to record
// still leaves its decision; its fsync runs beside the box's run, and
// the command's output and connections out wait for it (durableGate); the
// run's own record is written as soon as the command ended, and fsynced
// beside the box's teardown; and Exec returns (so the front end reports
// the result) only once Sync says every record of the call is durable. A
// record that could not be written or fsynced fails the call: the
// command never starts without its decision in the file, and no result
// is reported without every record durable.
func (k *Kernel) Exec(ctx context.Context, call mediator.Call, o mediator.ExecOptions) (mediator.ExecResult, error) {
	pending := &pendingRecords{}
	then := o.BeforeStart
	o.BeforeStart = func() error {
		if err := pending.wait(); err != nil {
			return err
		}
		if then != nil {
			return then()
		}
		return nil
	}
	// The command's output is streamed while it runs, and is as much its
	// result as its exit code: none of it passes before the records are
	// durable (the decision's fsync runs beside the box's start, so the
	// wait is almost always over before the first byte), and none of it
	// passes when they cannot be made so. A connection out of the box
	// sends data as surely as output does: the egress proxy lets none
	// go out before the same wait, and refuses them all after a failure.
	gate := &durableGate{sync: k.Audit.Sync}
	o.Stdout, o.Stderr = gate.writer(o.Stdout), gate.writer(o.Stderr)
	o.Durable = gate.wait
	res, err := k.Kernel.Exec(context.WithValue(ctx, syncAfter{}, pending), call, o)
	// The records' fsync, the one wait of a call on the disk (the
	// decision's ran beside the box's start).
	endSync := starttrace.Begin("audit-sync")
	serr := k.Audit.Sync()
	endSync()
	if serr != nil {
		return res, errs.Wrap(errs.Unavailable, serr, "audit: the record could not be made durable")
	}
	return res, err
}

// durableGate holds a command's output until its records are durable:
// the first write waits for sync, once, and every write after a failure
// is refused (the runner then drops the rest of the output).
type durableGate struct {
	once sync.Once
	sync func() error
	err  error
}

// writer is w behind the gate; nil stays nil (the output is discarded).
func (g *durableGate) writer(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return gatedWriter{g: g, w: w}
}

func (g *durableGate) wait() error {
	g.once.Do(func() { g.err = g.sync() })
	return g.err
}

type gatedWriter struct {
	g *durableGate
	w io.Writer
}

func (w gatedWriter) Write(p []byte) (int, error) {
	if err := w.g.wait(); err != nil {
		return 0, errs.Wrap(errs.Unavailable, err, "audit: the output is withheld: its record could not be made durable")
	}
	return w.w.Write(p)
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func (a auditRecorder) Record(ctx context.Context, r mediator.Record) error {
	defer starttrace.Begin("audit-append")()
	fields := map[string]any{}
	if r.Category != "" {
		fields["category"] = r.Category
	}
	if r.Kind == "decision" || r.Kind == "" {
		fields["call"] = r.Call
	}
	for k, v := range r.Fields {
		fields[k] = v
	}
	// The log hashes its own encoding of plain JSON values, turning
	// structs into them itself (audit.Record.Fields). A sink that also
	// traces is given them plain already, so its spans carry the values
	// as recorded.
	if a.log == nil {
		b, err := json.Marshal(fields)
		if err != nil {
			return fmt.Errorf("audit fields: %w", err)
		}
		fields = nil
		if err := json.Unmarshal(b, &fields); err != nil {
			return fmt.Errorf("audit fields: %w", err)
		}
	}
	rec := audit.Record{Kind: nonEmpty(r.Kind, "decision"), Time: r.Time,
		CallDigest: strings.TrimPrefix(r.CallDigest, "sha256:"), Verdict: r.Verdict.String(),
		Rule: r.Rule, Reason: r.Reason, Decider: r.Decider, Fields: fields}
	// Only an allowed command's decision inside Kernel.Exec, which waits
	// for it to be written before the box starts and syncs before it
	// returns: a refusal is reported at once, so it is durable first, like
	// every other record.
	p, inExec := ctx.Value(syncAfter{}).(*pendingRecords)
	if inExec && a.log != nil && rec.Kind == "decision" && r.Verdict == policy.Allow {
		if p.add(a.log, rec) {
			return nil
		}
		// Decided while the box runs (a connection a person let through):
		// written before it goes ahead, fsynced before the result.
		return a.log.AppendDeferred(rec)
	}
	// The run's record is written at once, as soon as the command ended
	// (runner.Request.Ended), and its fsync, a wait on the disk, runs
	// beside the box's teardown: Kernel.Exec returns the result only once
	// Sync says it is durable, and fails the call when it is not. (Its
	// encoding is work for the processor, which a loaded host would not
	// run any sooner beside the teardown.)
	if inExec && a.log != nil && rec.Kind == "run" {
		return a.log.AppendDeferred(rec)
	}
	return a.l.Append(rec)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
