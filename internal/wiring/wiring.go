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

	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
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
	// AuditFile is the audit log; "" is audit.DefaultPath.
	AuditFile string
	// GrantsFile is where "allow always" saves; "" is the default path.
	GrantsFile string
	// TraceFile, when set, also sends every audit record as an
	// OpenTelemetry span to that file (JSON, one span per record).
	TraceFile string
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
	closers    []io.Closer
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
	p, file, err := LoadPolicy(cfg.Dir, workdir, cfg.PolicyFile)
	if err != nil {
		return nil, err
	}
	if mode == policy.Fix && len(p.FS.Write) == 0 {
		return nil, errs.Invalidf("--mode fix: the policy grants no writes (add paths to fs.write in %s)", nonEmpty(file, "the policy"))
	}

	k := &Kernel{Policy: p, PolicyFile: file}
	fail := func(err error) (*Kernel, error) { k.Close(); return nil, err }

	grantsFile := cfg.GrantsFile
	if grantsFile == "" {
		if grantsFile, err = approvals.DefaultGrantsPath(cfg.Getenv); err != nil {
			return fail(err)
		}
	}
	grants, err := approvals.LoadGrants(grantsFile)
	if err != nil {
		return fail(err)
	}
	if len(grants) > 0 {
		p = p.WithGrants(grants)
		k.Policy = p
	}

	auditFile := cfg.AuditFile
	if auditFile == "" {
		if auditFile, err = audit.DefaultPath(cfg.Getenv); err != nil {
			return fail(err)
		}
	}
	if k.Audit, err = audit.Open(auditFile, audit.Options{}); err != nil {
		return fail(err)
	}
	k.closers = append(k.closers, k.Audit)
	var sink audit.Sink = k.Audit
	if cfg.TraceFile != "" {
		f, err := os.OpenFile(cfg.TraceFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fail(errs.Wrap(errs.Unavailable, err, "trace file"))
		}
		tracer, shutdown, err := audit.WriterTracing(f)
		if err != nil {
			f.Close()
			return fail(errs.Wrap(errs.Unavailable, err, "trace file"))
		}
		k.closers = append(k.closers, f, closerFunc(func() error { return shutdown(context.Background()) }))
		sink = audit.Traced(k.Audit, tracer)
	}

	bo := approvals.Options{SocketDir: approvals.DefaultSocketDir(cfg.Getenv), GrantsFile: grantsFile,
		Log: log, Audit: k.Audit}
	if cfg.Terminal {
		if tty, err := approvals.OpenTerminal(); err == nil {
			bo.Terminal = tty
			k.closers = append(k.closers, tty)
		}
	}
	if k.Broker, err = approvals.New(bo); err != nil {
		return fail(err)
	}
	k.closers = append(k.closers, k.Broker)

	k.World = World(workdir, cfg.Getenv("HOME"), mode)
	if k.Kernel, err = mediator.New(p, k.World, mediator.Options{
		Approver: brokerApprover{b: k.Broker, workdir: workdir},
		Recorder: auditRecorder{l: sink},
		Private:  []string{grantsFile, auditFile, bo.SocketDir},
		Tier:     cfg.Tier, Exe: cfg.Exe, Environ: cfg.Environ, Warn: cfg.Warn, OutputCap: cfg.OutputCap,
		Offloader: cfg.Offloader, Scope: cfg.Scope, AfterDecide: cfg.AfterDecide,
	}); err != nil {
		return fail(err)
	}
	return k, nil
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
// returns the built-in workspace profile when there is neither.
func LoadPolicy(dir, workdir, file string) (*policy.Policy, string, error) {
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
	p, err := policy.Parse(file, data)
	if err != nil {
		return nil, "", err
	}
	return p, file, nil
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
type auditRecorder struct{ l audit.Sink }

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func (a auditRecorder) Record(_ context.Context, r mediator.Record) error {
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
	// The log hashes its own encoding of plain JSON values; structs are
	// turned into them first so the record reads back exactly as hashed.
	b, err := json.Marshal(fields)
	if err != nil {
		return fmt.Errorf("audit fields: %w", err)
	}
	fields = nil
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("audit fields: %w", err)
	}
	return a.l.Append(audit.Record{Kind: nonEmpty(r.Kind, "decision"), Time: r.Time,
		CallDigest: strings.TrimPrefix(r.CallDigest, "sha256:"), Verdict: r.Verdict.String(),
		Rule: r.Rule, Reason: r.Reason, Decider: r.Decider, Fields: fields})
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
