package wire

// The plain types of a job's calls and its trace. This file imports no
// go.temporal.io package: the node and the API read these types without
// the SDK.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// Kinds of a job's call, as the API and the CLI spell them.
const (
	CallExec       = "exec"        // run Argv
	CallShell      = "shell"       // run the shell string Command
	CallReadFile   = "read_file"   // read Path
	CallWriteFile  = "write_file"  // write Content to Path
	CallList       = "list"        // list the directory Path
	CallReadResult = "read_result" // read part of the offloaded result Ref
	CallTool       = "tool"        // call Tool of the job's MCP server Server with Args
)

// Wire names of a job's calls. Changing one breaks running workflows.
const (
	// OpenActivity builds a job's kernel and job directory on the node
	// that claimed it and returns the lease's handle.
	OpenActivity = "airlock.open"
	// LeaseActivity holds the job's kernel on its node for the job's
	// life, heartbeating: its silence is the node lost, its cancellation
	// (a kill) tears the kernel down.
	LeaseActivity = "airlock.lease"
	// CallActivity runs one call through the job's kernel.
	CallActivity = "airlock.call"
	// CloseActivity tears the job's kernel down.
	CloseActivity = "airlock.close"
	// LeaseCallActivity is the whole lease of a closed job of one call:
	// it opens the job's kernel, runs the call through it and closes it,
	// heartbeating throughout (its silence is the node lost, its
	// cancellation a kill), and answers the call's result. A node that
	// does not know it fails the job rather than hold a lease that runs
	// nothing.
	LeaseCallActivity = "airlock.lease.call"
	// SignalCall carries a Call to an open job.
	SignalCall = "airlock.call"
	// SignalRelease ends an open job once its calls are done.
	SignalRelease = "airlock.release"
	// QueryTrace returns the job's Trace.
	QueryTrace = "airlock.trace"
	// QueryCallResult returns the CallResult of one call of the job, by
	// its id (for the caller of an open job waiting on it).
	QueryCallResult = "airlock.call_result"
)

// DefaultIdleTimeout is how long an open job waits for its next call
// before it ends.
const DefaultIdleTimeout = 10 * time.Minute

// MaxCalls bounds the calls of one job: its history carries every one.
const MaxCalls = 1000

// ResultCap bounds the output all the calls of a job keep in its result
// together (each stream of each call is held to OutputCap as well).
const ResultCap = 1 << 20

// Call is one call of a job: what it asks the job's kernel to do. Only the
// fields of its Kind are read; the others must be empty.
type Call struct {
	// ID names the call within its job; "" is given one by the workflow
	// ("c1", "c2", … in order).
	ID   string `json:"id,omitempty"`
	Kind string `json:"kind"`
	// Argv is an exec call's command; Command a shell call's string.
	Argv    []string `json:"argv,omitempty"`
	Command string   `json:"command,omitempty"`
	// Path is a file call's path, relative to the job's working directory
	// or absolute (decided by the job's policy either way).
	Path string `json:"path,omitempty"`
	// Content is a write_file call's whole new content.
	Content string `json:"content,omitempty"`
	// Ref, View, Range, Query and Budget are read_result's arguments.
	Ref    string `json:"ref,omitempty"`
	View   string `json:"view,omitempty"`
	Range  string `json:"range,omitempty"`
	Query  string `json:"query,omitempty"`
	Budget int    `json:"budget,omitempty"`
	// Stdin is a command's standard input.
	Stdin string `json:"stdin,omitempty"`
	// Server, Tool and Args are a tool call's: the name of one of the
	// job's MCP servers (Job.MCP), the tool as that server lists it, and
	// its arguments (a JSON object, or none).
	Server string          `json:"server,omitempty"`
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	// Taint is set by the server, never by a caller: why the job is
	// tainted by what it read since its start (the server's record). The
	// node marks the job's kernel tainted with it before the call runs,
	// so a kernel built untainted learns of a read it did not make itself.
	Taint string `json:"taint,omitempty"`
}

// Validate refuses a call that names no known kind, lacks what its kind
// needs, or carries fields of another kind, naming the field.
func (c Call) Validate() error {
	if c.ID != "" {
		if err := CheckName("call id", c.ID); err != nil {
			return err
		}
	}
	var want []string
	switch c.Kind {
	case CallExec:
		if len(c.Argv) == 0 {
			return errs.Invalidf("call %s: argv: empty (an exec call runs argv)", c.ID)
		}
		want = []string{"argv", "stdin"}
	case CallShell:
		if c.Command == "" {
			return errs.Invalidf("call %s: command: empty (a shell call runs command)", c.ID)
		}
		want = []string{"command", "stdin"}
	case CallReadFile, CallWriteFile:
		if c.Path == "" {
			return errs.Invalidf("call %s: path: empty (a %s call names a path)", c.ID, c.Kind)
		}
		want = []string{"path"}
		if c.Kind == CallWriteFile {
			want = append(want, "content")
		}
	case CallList:
		want = []string{"path"}
	case CallReadResult:
		if c.Ref == "" {
			return errs.Invalidf("call %s: ref: empty (a read_result call names the ref of an offloaded result)", c.ID)
		}
		if !refForm(c.Ref) {
			return errs.Invalidf("call %s: ref %q: want %s followed by 64 lower-case hex digits, its one written form", c.ID, c.Ref, refPrefix)
		}
		if c.Budget < 0 {
			return errs.Invalidf("call %s: budget: negative", c.ID)
		}
		want = []string{"ref", "view", "range", "query", "budget"}
	case CallTool:
		if err := c.validateTool(); err != nil {
			return err
		}
		want = []string{"server", "tool", "args"}
	default:
		return errs.Invalidf("call %s: kind %q: want one of exec, shell, read_file, write_file, list, read_result, tool", c.ID, c.Kind)
	}
	for _, f := range c.setFields() {
		if !contains(want, f) {
			return errs.Invalidf("call %s: %s: not a field of a %s call", c.ID, f, c.Kind)
		}
	}
	return nil
}

// refPrefix begins every file reference (files.RefPrefix).
const refPrefix = "airlock-file:sha256:"

// refForm says whether ref is a file reference in its one written form:
// no other spelling of a ref reaches a node or a store.
func refForm(ref string) bool {
	h, ok := strings.CutPrefix(ref, refPrefix)
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// setFields names the call's non-empty fields (but id and kind).
func (c Call) setFields() []string {
	var out []string
	add := func(name string, set bool) {
		if set {
			out = append(out, name)
		}
	}
	add("argv", len(c.Argv) > 0)
	add("command", c.Command != "")
	add("path", c.Path != "")
	add("content", c.Content != "")
	add("ref", c.Ref != "")
	add("view", c.View != "")
	add("range", c.Range != "")
	add("query", c.Query != "")
	add("budget", c.Budget != 0)
	add("stdin", c.Stdin != "")
	add("server", c.Server != "")
	add("tool", c.Tool != "")
	add("args", len(c.Args) > 0)
	return out
}

// validateTool refuses a tool call without a server or a tool, or whose
// args are not one JSON object (decoded exactly: no keys given twice).
func (c Call) validateTool() error {
	if c.Server == "" {
		return errs.Invalidf("call %s: server: empty (a tool call names one of the job's MCP servers)", c.ID)
	}
	if err := CheckName("server", c.Server); err != nil {
		return errs.Invalidf("call %s: %s", c.ID, errs.AgentMessage(err))
	}
	if c.Tool == "" {
		return errs.Invalidf("call %s: tool: empty (a tool call names the tool as its server lists it)", c.ID)
	}
	if len(c.Tool) > 128 || strings.ContainsFunc(c.Tool, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return errs.Invalidf("call %s: tool: want printable ASCII without spaces, at most 128 bytes", c.ID)
	}
	if len(c.Args) > 0 {
		if _, err := c.ToolArgs(); err != nil {
			return errs.Invalidf("call %s: args: %s", c.ID, errs.AgentMessage(err))
		}
	}
	return nil
}

// ToolArgs decodes a tool call's args: a JSON object, nil when none. A
// key given twice, the same or alike under case folding, at any depth, is
// refused (CheckJSON): decoded here the last spelling would win, or both
// would reach a server whose decoder matches keys ignoring case, while a
// reader of the first saw something else.
func (c Call) ToolArgs() (map[string]any, error) {
	if len(c.Args) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(c.Args))
	d.UseNumber()
	var args map[string]any
	if err := d.Decode(&args); err != nil || args == nil || d.More() {
		return nil, errs.Invalidf("not a JSON object")
	}
	if err := CheckJSON(c.Args); err != nil {
		return nil, err
	}
	return args, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Describe is the call as one line for a trace: what it runs or names,
// never a body (a write's content or a command's input is shown by its
// size only). Whoever shows it escapes it for a terminal.
func (c Call) Describe() string {
	var s string
	switch c.Kind {
	case CallExec:
		s = strings.Join(c.Argv, " ")
	case CallShell:
		s = c.Command
	case CallWriteFile:
		s = fmt.Sprintf("%s (%d bytes)", c.Path, len(c.Content))
	case CallReadResult:
		s = c.Ref
	case CallTool:
		s = fmt.Sprintf("%s/%s (args %d bytes)", c.Server, c.Tool, len(c.Args))
	default:
		s = c.Path
	}
	if c.Stdin != "" {
		s += " <stdin " + strconv.Itoa(len(c.Stdin)) + " bytes>"
	}
	s = strings.Join(strings.Fields(s), " ") // one line
	const most = 200
	if len(s) > most {
		s = s[:most] + "…"
	}
	return s
}

// CallResult is how one call of a job ended on its node.
type CallResult struct {
	// Call is the call's id.
	Call string `json:"call"`
	Kind string `json:"kind,omitempty"`
	Node string `json:"node"`
	// Tier is the sandbox tier the call ran at (0 on an opted-out node).
	Tier     int    `json:"tier"`
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	// Text is what a file or read_result call returned: the content, the
	// listing, the confirmation of a write, or why its program failed
	// (ExitCode is then 1).
	Text string `json:"text,omitempty"`
	// Truncated says output beyond OutputCap (or the job result's
	// ResultCap) was left out.
	Truncated bool `json:"truncated,omitempty"`
	// Refused says the job's kernel (or the node's floor check, or the
	// workflow for a malformed call) denied the call; Reason says why, as
	// an agent may read it, and Rule which rule decided ("taint" when the
	// job's taint made it wait for a person).
	Refused bool   `json:"refused,omitempty"`
	Verdict string `json:"verdict,omitempty"`
	Decider string `json:"decider,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Refs are the refs (files.Ref strings) of the results the call
	// offloaded.
	Refs []string `json:"refs,omitempty"`
	// Taint is set when the job's kernel became tainted during the call
	// (it read a tainted job's result), saying why.
	Taint string `json:"taint,omitempty"`
	// OptedOut says the call ran on a node under a sandbox opt-out.
	OptedOut bool `json:"opted_out,omitempty"`
	// Error is why the call did not run to an end (its node failed it),
	// as an agent may read it; "" when it did.
	Error string `json:"error,omitempty"`
}

// Failed says the call did not succeed: refused, failed to run, or
// exited non-zero. A closed job's later calls do not run after it.
func (r CallResult) Failed() bool { return r.Refused || r.Error != "" || r.ExitCode != 0 }

// CallRecord is what a job's trace shows of one call: never a body (no
// output, no content, no input).
type CallRecord struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Call is the call as one line (Call.Describe).
	Call     string `json:"call"`
	Node     string `json:"node,omitempty"`
	Tier     int    `json:"tier"`
	OptedOut bool   `json:"opted_out,omitempty"`
	Verdict  string `json:"verdict,omitempty"`
	Decider  string `json:"decider,omitempty"`
	Rule     string `json:"rule,omitempty"`
	// Reason is the decision's reason, or why the call did not run.
	Reason   string    `json:"reason,omitempty"`
	Refused  bool      `json:"refused,omitempty"`
	ExitCode int       `json:"exit_code"`
	Started  time.Time `json:"started,omitzero"`
	// Ended is zero while the call runs (or waits for a person).
	Ended time.Time `json:"ended,omitzero"`
	// Refs are the refs of the results the call offloaded.
	Refs []string `json:"refs,omitempty"`
}

// Record is what the trace keeps of the call c that ended with r: the
// reason says why the taint made it wait when the taint rule decided.
func Record(c Call, r CallResult) CallRecord {
	reason := r.Reason
	if reason == "" {
		reason = r.Error
	}
	return CallRecord{ID: c.ID, Kind: c.Kind, Call: c.Describe(), Node: r.Node, Tier: r.Tier, OptedOut: r.OptedOut,
		Verdict: r.Verdict, Decider: r.Decider, Rule: r.Rule, Reason: reason, Refused: r.Refused,
		ExitCode: r.ExitCode, Refs: r.Refs}
}

// Trace is the story of a job's calls: where each ran, at which tier,
// what decided it.
type Trace struct {
	Job string `json:"job"`
	// Nodes are the nodes the job's calls ran on, in order of first use.
	Nodes []string `json:"nodes,omitempty"`
	// LowestTier is the lowest tier any call ran at (a call on an
	// opted-out node counts as 0); -1 until a call ran.
	LowestTier   int    `json:"lowest_tier"`
	Tainted      bool   `json:"tainted"`
	Taint        string `json:"taint,omitempty"`
	OutsideEvent bool   `json:"outside_event"`
	// Open says the job takes calls after its first ones (a lease), and
	// Released that its caller has let it go (or it idled out).
	Open     bool         `json:"open,omitempty"`
	Released bool         `json:"released,omitempty"`
	Calls    []CallRecord `json:"calls"`
}

// NewTrace is the trace of job j before any call ran.
func NewTrace(j Job) Trace {
	return Trace{Job: j.ID, LowestTier: -1, Tainted: j.Tainted, Taint: j.Taint, OutsideEvent: j.FromOutside(),
		Open: j.Open, Calls: []CallRecord{}}
}

// Add records a call's start or end: an end replaces the started record
// of the same id (a call run again after its node was lost keeps the
// first run's record), the node joins the trace's nodes, the tier lowers
// its lowest. A call that never reached a node sets no tier.
func (t *Trace) Add(rec CallRecord) {
	replaced := false
	for i := range t.Calls {
		if t.Calls[i].ID == rec.ID && t.Calls[i].Ended.IsZero() {
			if rec.Started.IsZero() {
				rec.Started = t.Calls[i].Started
			}
			t.Calls[i], replaced = rec, true
			break
		}
	}
	if !replaced {
		t.Calls = append(t.Calls, rec)
	}
	if rec.Node == "" || rec.Ended.IsZero() {
		return
	}
	if !contains(t.Nodes, rec.Node) {
		t.Nodes = append(t.Nodes, rec.Node)
	}
	tier := rec.Tier
	if rec.OptedOut {
		tier = 0
	}
	if t.LowestTier < 0 || tier < t.LowestTier {
		t.LowestTier = tier
	}
}

// Lease is the handle of a job's kernel held on its node: the job's id,
// and nothing of the node's (no process, no path).
type Lease struct {
	Job  string `json:"job"`
	Node string `json:"node"`
	// Tier is the tier the job's kernel runs its boxes at.
	Tier int `json:"tier"`
}

// LeaseRequest opens (or holds, or closes) job's kernel on Node.
type LeaseRequest struct {
	Job  Job    `json:"job"`
	Node string `json:"node"`
}

// CallRequest is one call of a leased job, handed to the node holding it.
type CallRequest struct {
	Job  Job    `json:"job"`
	Node string `json:"node"`
	Call Call   `json:"call"`
}

// JobCalls is the job's calls as it was started: its Calls, or its one
// command (Argv or Command, with Input as its standard input), so a job of
// the old shape is one call.
func (j Job) JobCalls() []Call {
	if len(j.Calls) > 0 {
		return j.Calls
	}
	switch {
	case len(j.Argv) > 0:
		return []Call{{Kind: CallExec, Argv: j.Argv, Stdin: j.Input}}
	case j.Command != "":
		return []Call{{Kind: CallShell, Command: j.Command, Stdin: j.Input}}
	}
	return nil
}

// IdleFor is how long an open job waits for a call.
func (j Job) IdleFor() time.Duration {
	if j.IdleTimeout > 0 {
		return j.IdleTimeout
	}
	return DefaultIdleTimeout
}

// validateCalls refuses a job's calls that could not run, naming the call
// and the field.
func (j Job) validateCalls() error {
	if len(j.Calls) > MaxCalls {
		return errs.Invalidf("job %s: calls: %d, at most %d", j.ID, len(j.Calls), MaxCalls)
	}
	if len(j.Calls) > 0 && (len(j.Argv) > 0 || j.Command != "") {
		return errs.Invalidf("job %s: calls: given with a command; give the command as the first call", j.ID)
	}
	seen := map[string]bool{}
	for i, c := range j.Calls {
		if err := c.Validate(); err != nil {
			return errs.Invalidf("job %s: calls[%d]: %s", j.ID, i, errs.AgentMessage(err))
		}
		id := c.ID
		if id == "" {
			id = "c" + strconv.Itoa(i+1) // the workflow's name for it
		}
		if c.Kind == CallTool && j.MCP[c.Server] == nil {
			return errs.Invalidf("job %s: calls[%d]: server %q: not one of the job's MCP servers (mcp)", j.ID, i, c.Server)
		}
		if seen[id] {
			return errs.Invalidf("job %s: calls[%d]: id %q: given twice", j.ID, i, id)
		}
		seen[id] = true
	}
	if j.Open && j.Retries > 0 {
		return errs.Invalidf("job %s: retries on an open job: its calls came one by one from a caller who read their results, so it is never run again on another node", j.ID)
	}
	if j.IdleTimeout < 0 {
		return errs.Invalidf("job %s: idle_timeout: negative", j.ID)
	}
	return nil
}
