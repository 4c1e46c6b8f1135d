package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names.
const (
	ToolExec       = "exec"
	ToolReadFile   = "read_file"
	ToolWriteFile  = "write_file"
	ToolListDir    = "list_dir"
	ToolSearch     = "search"
	ToolReadResult = mediator.ReadResultTool
)

// fitProps are the fit convention's arguments, in every tool's schema: an
// integer budget beside a view enum, so a gateway or runtime in front of this
// server recognises the convention (mcp.FitConvention) and fills a budget in.
const fitProps = `"view": {"type": "string", "enum": ["stub", "summary", "section", "full"], "description": "how much of the answer: stub (size and outline), summary (outline with first sentences), section (the part query names), full; left out: the biggest that fits"},
    "budget": {"type": "integer", "minimum": 1, "description": "the most tokens the answer may take"},
    "query": {"type": "string", "description": "for a section: a heading, a definition's name, a path, a line range such as 120-180, a JSON key or [3]"}`

func schema(props string, required ...string) json.RawMessage {
	if required == nil {
		required = []string{} // never null: clients validate it as an array
	}
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type": "object", "properties": {` + props + `, ` + fitProps +
		`}, "required": ` + string(req) + `, "additionalProperties": false}`)
}

// fitArgs are the convention's arguments as a call gives them.
type fitArgs struct {
	View   string `json:"view,omitempty"`
	Budget int    `json:"budget,omitempty"`
	Query  string `json:"query,omitempty"`
}

// output is what a tool made, before fitting and offloading.
type output struct {
	text string
	// name tells fit what the text is (a file's path gives its kind).
	name    string
	isError bool
	// meta is added to the result's _meta.
	meta map[string]any
	// fitted is set when the tool fitted its own answer (read_result).
	fitted *mcp.FitMeta
}

// tool is one of the server's tools.
type tool struct {
	def *sdk.Tool
	// run parses raw (strictly) and does the call; it returns the fit
	// arguments it was given.
	run func(ctx context.Context, raw json.RawMessage) (output, fitArgs, error)
}

// decode reads a call's arguments into dst, strictly: an unknown argument
// or a wrong type is an Invalid error naming the tool, told to the model.
// It also returns them as a map, which a policy's rule for the tool
// decides on.
func decode(name string, raw json.RawMessage, dst any) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	// One parse decides and acts here, but a gateway in front may have
	// read the other of two equal keys: refuse them.
	if err := mcp.CheckJSON(raw); err != nil {
		return nil, errs.Invalidf("%s: arguments: %s", name, errs.AgentMessage(err))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return nil, errs.Invalidf("%s: arguments: %s", name, strings.TrimPrefix(err.Error(), "json: "))
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, errs.Invalidf("%s: arguments are not a JSON object", name)
	}
	if c, ok := dst.(interface{ check(string) error }); ok {
		return args, c.check(name)
	}
	return args, nil
}

func (f fitArgs) check(name string) error {
	switch f.View {
	case "", "stub", "summary", "section", "full":
	default:
		return errs.Invalidf("%s: view %q is not one of stub, summary, section, full", name, f.View)
	}
	if f.Budget < 0 {
		return errs.Invalidf("%s: budget %d is negative", name, f.Budget)
	}
	return nil
}

func (s *Server) tools() []tool {
	return []tool{
		{def: &sdk.Tool{Name: ToolExec, Title: "Run a command",
			Description: "Run a command in airlock's sandbox, decided by the policy, and return its output and exit code. " +
				"Give argv (program and arguments, no shell) or command (a shell string, only where the policy accepts shell strings). " +
				"The command runs in the working directory; its output is bounded.",
			InputSchema: schema(`"argv": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "the program and its arguments"},
    "command": {"type": "string", "description": "a shell command line (sh -c), where the policy allows shell strings"},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "seconds after which the command is ended (at most the policy's wall-clock limit)"}`)},
			run: s.exec},
		{def: &sdk.Tool{Name: ToolReadFile, Title: "Read a file",
			Description: "Read a file the policy lets you read. The path is relative to the working directory.",
			InputSchema: schema(`"path": {"type": "string", "description": "the file, relative to the working directory"}`, "path"),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			run: s.readFile},
		{def: &sdk.Tool{Name: ToolWriteFile, Title: "Write a file",
			Description: "Create or replace a file with content (missing directories are made). Only in fix mode and where the policy lets you write.",
			InputSchema: schema(`"path": {"type": "string", "description": "the file, relative to the working directory"},
    "content": {"type": "string", "description": "the file's whole new content"}`, "path", "content"),
			Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true)}},
			run: s.writeFile},
		{def: &sdk.Tool{Name: ToolListDir, Title: "List a directory",
			Description: "List a directory's entries: directories end in /, files show their size, links their target.",
			InputSchema: schema(`"path": {"type": "string", "description": "the directory, relative to the working directory (default .)"}`),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			run: s.listDir},
		{def: &sdk.Tool{Name: ToolSearch, Title: "Search files",
			Description: "Search file contents for an extended regular expression (grep -E), recursively; answers path:line:text. " +
				"Binary files and .git are skipped.",
			InputSchema: schema(`"pattern": {"type": "string", "minLength": 1, "description": "an extended regular expression"},
    "path": {"type": "string", "description": "a directory or file, relative to the working directory (default .)"}`, "pattern"),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			run: s.search},
		{def: &sdk.Tool{Name: ToolReadResult, Title: "Read an offloaded result",
			Description: mediator.ReadResultDescription, InputSchema: json.RawMessage(mediator.ReadResultSchema),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			run: s.readResult},
	}
}

func ptr[T any](v T) *T { return &v }

// handler runs t for the SDK: a denial is the structured JSON-RPC error, any
// other failure a failed call the model reads, and a result is fitted and
// offloaded by the kernel.
func (s *Server) handler(t tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var raw json.RawMessage
		if req.Params != nil {
			raw = req.Params.Arguments
		}
		ctx, rt := s.withApprover(ctx, req)
		ctx = s.bind(ctx, req.Session) // the session's warm boxes (session.go)
		out, fa, err := t.run(ctx, raw)
		if err == nil {
			var res *sdk.CallToolResult
			if res, err = s.finish(ctx, t.def.Name, out, fa); err == nil {
				return res, nil
			}
		}
		switch {
		case rt != nil && rt.asked != nil:
			return rt.asked, nil // the question is this round's answer
		case errs.Is(err, errs.Denied):
			return nil, mcp.Error(err)
		}
		return errorResult(err), nil
	}
}

// errorResult is a failed call: the model reads why, and
// `_meta["airlock/error"]` says of which class the failure is (invalid: the
// call was malformed; unavailable: airlock could not run it as the policy
// asks; …), so a client can tell the model's mistakes from airlock's.
func errorResult(err error) *sdk.CallToolResult {
	// The model reads the message, never the causes it wraps (host
	// paths, system-call errors).
	msg := errs.AgentMessage(err)
	class := errs.ClassOf(err)
	if class == errs.Internal {
		msg = "airlock: the call failed inside airlock"
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true,
		Meta: sdk.Meta{mcp.MetaError: map[string]string{"class": class.String()}}}
}

// finish has the kernel fit out to the call's view, budget and query and
// offload it when it is still too heavy for the model (a result over the
// cap fails the call). `_meta["airlock/fit"]` says what was done.
func (s *Server) finish(ctx context.Context, name string, out output, fa fitArgs) (*sdk.CallToolResult, error) {
	text := out.text
	meta := mcp.FitMeta{}
	if out.fitted != nil {
		meta = *out.fitted
	} else {
		r, err := s.o.Kernel.Fit(ctx, mediator.FitRequest{Tool: name, Text: out.text, Name: out.name,
			View: fa.View, Budget: fa.Budget, Query: fa.Query})
		if err != nil {
			return nil, err
		}
		text, meta.Note = r.Text, r.Note
		if r.Offloaded != nil {
			meta.Offloaded = r.Offloaded
		}
	}
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: out.isError}
	m := sdk.Meta{}
	for k, v := range out.meta {
		m[k] = v
	}
	if meta.Note != nil || meta.Offloaded != nil {
		meta.Items = 1
		m[mcp.MetaFit] = meta
	}
	if len(m) > 0 {
		res.Meta = m
	}
	return res, nil
}

type execArgs struct {
	Argv    []string `json:"argv,omitempty"`
	Command *string  `json:"command,omitempty"`
	Timeout float64  `json:"timeout,omitempty"`
	fitArgs
}

// exec runs argv or a shell string through the kernel: decided, escalated,
// audited, and run in the box the policy describes (egress included).
func (s *Server) exec(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a execArgs
	args, err := decode(ToolExec, raw, &a)
	if err != nil {
		return output{}, fitArgs{}, err
	}
	call := mediator.Call{Tool: ToolExec, Args: args}
	switch {
	case len(a.Argv) > 0 && a.Command != nil:
		return output{}, a.fitArgs, errs.Invalidf("exec: give argv or command, not both")
	case len(a.Argv) > 0:
		call.Kind, call.Argv = mediator.KindExec, a.Argv
	case a.Command != nil && strings.TrimSpace(*a.Command) != "":
		call.Kind, call.Command = mediator.KindShell, *a.Command
	default:
		return output{}, a.fitArgs, errs.Invalidf("exec: give argv (an array: program and arguments) or command (a shell string)")
	}
	if a.Timeout < 0 || math.IsNaN(a.Timeout) || a.Timeout > 1e6 {
		return output{}, a.fitArgs, errs.Invalidf("exec: timeout must be a positive number of seconds")
	}
	if a.Timeout > 0 {
		// The timeout narrows the policy's wall-clock limit for this call:
		// the box ends the command, and the limit can only get shorter.
		call.Narrow = &policy.Policy{Limits: policy.Limits{Wall: time.Duration(a.Timeout * float64(time.Second))}}
	}
	var stdout, stderr bytes.Buffer
	res, err := s.o.Kernel.Exec(ctx, call, mediator.ExecOptions{Stdout: &stdout, Stderr: &stderr,
		OutputCap: s.outputCap})
	if err != nil {
		return output{}, a.fitArgs, err
	}
	var b strings.Builder
	b.Write(stdout.Bytes())
	if stderr.Len() > 0 {
		endLine(&b)
		b.WriteString("[stderr]\n")
		b.Write(stderr.Bytes())
	}
	endLine(&b)
	fmt.Fprintf(&b, "[exit code %d]", res.ExitCode)
	if res.WallTimeout {
		b.WriteString(" [ended by the time limit]")
	}
	if res.Truncated {
		fmt.Fprintf(&b, " [output cut at %d bytes]", s.outputCap)
	}
	b.WriteString("\n")
	return output{text: b.String(), isError: res.ExitCode != 0,
		meta: map[string]any{"airlock/exec": map[string]any{"exit_code": res.ExitCode, "wall_timeout": res.WallTimeout,
			"truncated": res.Truncated, "tier": res.Description.Tier}}}, a.fitArgs, nil
}

func endLine(b *strings.Builder) {
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
}

type pathArgs struct {
	Path string `json:"path"`
	fitArgs
}

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
	fitArgs
}

type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
	fitArgs
}

func (s *Server) readFile(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a pathArgs
	args, err := decode(ToolReadFile, raw, &a)
	if err != nil {
		return output{}, fitArgs{}, err
	}
	if a.Path == "" {
		return output{}, a.fitArgs, errs.Invalidf("%s: path is required", ToolReadFile)
	}
	return s.file(ctx, mediator.Call{Kind: mediator.KindRead, Tool: ToolReadFile, Args: args, Path: a.Path}, a.fitArgs)
}

func (s *Server) writeFile(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a writeArgs
	args, err := decode(ToolWriteFile, raw, &a)
	if err != nil {
		return output{}, fitArgs{}, err
	}
	if a.Path == "" {
		return output{}, a.fitArgs, errs.Invalidf("%s: path is required", ToolWriteFile)
	}
	if a.Content == nil {
		return output{}, a.fitArgs, errs.Invalidf("%s: content is required (the file's whole new content)", ToolWriteFile)
	}
	// The content is decided by its digest, not kept in the arguments a
	// tool rule sees or the audit log records.
	delete(args, "content")
	return s.file(ctx, mediator.Call{Kind: mediator.KindWrite, Tool: ToolWriteFile, Args: args, Path: a.Path,
		Content: a.Content}, a.fitArgs)
}

func (s *Server) listDir(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a pathArgs
	args, err := decode(ToolListDir, raw, &a)
	if err != nil {
		return output{}, fitArgs{}, err
	}
	return s.file(ctx, mediator.Call{Kind: mediator.KindList, Tool: ToolListDir, Args: args, Path: a.Path}, a.fitArgs)
}

func (s *Server) search(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a searchArgs
	args, err := decode(ToolSearch, raw, &a)
	if err != nil {
		return output{}, fitArgs{}, err
	}
	if a.Pattern == "" {
		return output{}, a.fitArgs, errs.Invalidf("%s: pattern is required", ToolSearch)
	}
	return s.file(ctx, mediator.Call{Kind: mediator.KindSearch, Tool: ToolSearch, Args: args, Path: a.Path,
		Pattern: a.Pattern}, a.fitArgs)
}

// file has the kernel decide and carry out a file tool's call.
func (s *Server) file(ctx context.Context, call mediator.Call, fa fitArgs) (output, fitArgs, error) {
	r, err := s.o.Kernel.File(ctx, call)
	if err != nil {
		return output{}, fa, err
	}
	return output{text: r.Text, name: r.Path, isError: r.Failed}, fa, nil
}

func (s *Server) readResult(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var m map[string]any
	args, err := decode(ToolReadResult, raw, &m)
	if err != nil {
		return output{}, fitArgs{}, err
	}
	r, err := s.o.Kernel.ReadResult(ctx, mediator.Call{Kind: mediator.KindReadResult, Args: args})
	if err != nil {
		return output{}, fitArgs{}, err
	}
	note := r.Note
	return output{text: r.Text, fitted: &mcp.FitMeta{Note: &note}}, fitArgs{}, nil
}
