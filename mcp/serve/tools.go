package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/offload"
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
	ToolReadResult = offload.ToolName
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
func decode(name string, raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	// One parse decides and acts here, but a gateway in front may have
	// read the other of two equal keys: refuse them.
	if err := mcp.CheckJSON(raw); err != nil {
		return errs.Wrap(errs.Invalid, err, "%s: arguments", name)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return errs.Invalidf("%s: arguments: %s", name, strings.TrimPrefix(err.Error(), "json: "))
	}
	if c, ok := dst.(interface{ check(string) error }); ok {
		return c.check(name)
	}
	return nil
}

func (f fitArgs) check(name string) error {
	if f.View != "" && !fitView(f.View) {
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
			Description: offload.ToolDescription, InputSchema: json.RawMessage(offload.ToolSchema),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
			run: s.readResult},
	}
}

func ptr[T any](v T) *T { return &v }

// handler runs t for the SDK: a denial is the structured JSON-RPC error, any
// other failure a failed call the model reads, and a result is fitted and
// offloaded.
func (s *Server) handler(t tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var raw json.RawMessage
		if req.Params != nil {
			raw = req.Params.Arguments
		}
		ctx, rt := s.withApprover(ctx, req)
		failed := func(err error) (*sdk.CallToolResult, error) {
			switch {
			case rt != nil && rt.asked != nil:
				return rt.asked, nil // the question is this round's answer
			case errs.Is(err, errs.Denied):
				return nil, mcp.Error(err)
			}
			return errorResult(err), nil
		}
		if err := s.decideTool(ctx, t.def.Name, raw); err != nil {
			return failed(err)
		}
		out, fa, err := t.run(ctx, raw)
		if err != nil {
			return failed(err)
		}
		return s.finish(ctx, t.def.Name, out, fa), nil
	}
}

// decideTool decides the call as a tool call too when the policy names the
// tool under `tools` (so `tools: {exec: false}` switches exec off, and an
// escalate there asks a person for every call); a tool the policy does not
// name is decided by what it does alone.
func (s *Server) decideTool(ctx context.Context, name string, raw json.RawMessage) error {
	if _, named := s.o.Kernel.Policy().Tools[name]; !named {
		return nil
	}
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return errs.Invalidf("%s: arguments are not a JSON object", name)
		}
	}
	_, err := s.o.Kernel.Decide(ctx, mediator.Call{Kind: mediator.KindTool, Tool: name, Args: args})
	return err
}

// errorResult is a failed call: the model reads why.
func errorResult(err error) *sdk.CallToolResult {
	msg := err.Error()
	if errs.ClassOf(err) == errs.Internal {
		msg = "airlock: the call failed inside airlock"
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}
}

// finish fits out to the call's view, budget and query, offloads it when it
// is still too big for the model, and refuses a result over
// offload.MaxResult. `_meta["airlock/fit"]` says what was done.
func (s *Server) finish(ctx context.Context, name string, out output, fa fitArgs) *sdk.CallToolResult {
	if n := offload.JSONSize(out.text); n > offload.MaxResult {
		return errorResult(offload.TooLarge(name, n))
	}
	text := out.text
	meta := mcp.FitMeta{}
	if out.fitted != nil {
		meta = *out.fitted
	} else if fitWanted(fa) {
		r := fitText(text, fa, out.name)
		text = r.Text
		meta.Note = &r.Note
	}
	if s.o.Offloader != nil && out.fitted == nil {
		o, err := s.o.Offloader.Offload(ctx, s.o.Scope, name, text)
		if err != nil {
			return errorResult(err)
		}
		if o.Stub != nil {
			text = o.Text
			meta.Offloaded = o.Stub.Offloaded
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
	return res
}

// path makes a tool's path argument absolute: relative paths are read
// against the working directory. The policy decides the result (and its
// symlink-resolved form).
func (s *Server) path(tool, p string, def string) (string, error) {
	if p == "" {
		p = def
	}
	if p == "" {
		return "", errs.Invalidf("%s: path is required", tool)
	}
	if strings.ContainsRune(p, 0) {
		return "", errs.Invalidf("%s: the path holds a NUL byte", tool)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.o.World.Workdir, p)
	}
	return filepath.Clean(p), nil
}

// rel shows an absolute path relative to the working directory when it is
// inside it.
func (s *Server) rel(p string) string {
	if r, err := filepath.Rel(s.o.World.Workdir, p); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
		return r
	}
	return p
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
	if err := decode(ToolExec, raw, &a); err != nil {
		return output{}, fitArgs{}, err
	}
	var call mediator.Call
	switch {
	case len(a.Argv) > 0 && a.Command != nil:
		return output{}, a.fitArgs, errs.Invalidf("exec: give argv or command, not both")
	case len(a.Argv) > 0:
		call = mediator.Call{Kind: mediator.KindExec, Argv: a.Argv}
	case a.Command != nil && strings.TrimSpace(*a.Command) != "":
		call = mediator.Call{Kind: mediator.KindShell, Command: *a.Command}
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
	res, err := s.o.Kernel.Exec(ctx, call, mediator.ExecOptions{Tier: s.o.Tier, Stdout: &stdout, Stderr: &stderr,
		OutputCap: s.o.OutputCap, Environ: s.o.Environ, Exe: s.o.Exe, Warn: s.o.Warn})
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
		fmt.Fprintf(&b, " [output cut at %d bytes]", s.o.OutputCap)
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

func (s *Server) readFile(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a pathArgs
	if err := decode(ToolReadFile, raw, &a); err != nil {
		return output{}, fitArgs{}, err
	}
	abs, err := s.decidePath(ctx, ToolReadFile, mediator.KindRead, a.Path, "")
	if err != nil {
		return output{}, a.fitArgs, err
	}
	// head stops at one byte over the cap, so an endless file (a device,
	// a pipe) ends the program instead of running to the time limit.
	r, err := s.inBox(ctx, []string{"head", "-c", strconv.Itoa(offload.MaxResult + 1), "--", abs}, nil)
	if err != nil {
		return output{}, a.fitArgs, err
	}
	if r.code != 0 {
		return output{text: boxError(ToolReadFile, s.rel(abs), r), isError: true}, a.fitArgs, nil
	}
	return output{text: r.stdout, name: abs}, a.fitArgs, nil
}

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// writeScript makes the file's directory and writes standard input to it;
// the path is an argument, never part of the script.
const writeScript = `d=$(dirname -- "$1") && mkdir -p -- "$d" && cat > "$1"`

func (s *Server) writeFile(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a struct {
		writeArgs
		fitArgs
	}
	if err := decode(ToolWriteFile, raw, &a); err != nil {
		return output{}, fitArgs{}, err
	}
	if a.Content == nil {
		return output{}, a.fitArgs, errs.Invalidf("write_file: content is required (the file's whole new content)")
	}
	abs, err := s.decidePath(ctx, ToolWriteFile, mediator.KindWrite, a.Path, "")
	if err != nil {
		return output{}, a.fitArgs, err
	}
	r, err := s.inBox(ctx, []string{"sh", "-c", writeScript, "sh", abs}, strings.NewReader(*a.Content))
	if err != nil {
		return output{}, a.fitArgs, err
	}
	if r.code != 0 {
		return output{text: boxError(ToolWriteFile, s.rel(abs), r), isError: true}, a.fitArgs, nil
	}
	return output{text: fmt.Sprintf("wrote %d bytes to %s\n", len(*a.Content), s.rel(abs))}, a.fitArgs, nil
}

func (s *Server) listDir(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a pathArgs
	if err := decode(ToolListDir, raw, &a); err != nil {
		return output{}, fitArgs{}, err
	}
	abs, err := s.decidePath(ctx, ToolListDir, mediator.KindRead, a.Path, ".")
	if err != nil {
		return output{}, a.fitArgs, err
	}
	// Five NUL-ended fields an entry: depth, type, size, link target, name
	// (a name may hold any byte but NUL and /). Depth 0 is the path itself.
	r, err := s.inBox(ctx, []string{"find", "-H", abs, "-maxdepth", "1",
		"-printf", `%d\0%y\0%s\0%l\0%f\0`}, nil)
	if err != nil {
		return output{}, a.fitArgs, err
	}
	if r.code != 0 && r.stdout == "" {
		return output{text: boxError(ToolListDir, s.rel(abs), r), isError: true}, a.fitArgs, nil
	}
	text, isDir := formatEntries(r.stdout)
	if !isDir {
		return output{text: fmt.Sprintf("list_dir %s: not a directory (read it with read_file)", s.rel(abs)), isError: true}, a.fitArgs, nil
	}
	return output{text: text}, a.fitArgs, nil
}

// formatEntries turns find's fields into one line an entry, sorted by name;
// isDir says whether the listed path (depth 0) is a directory.
func formatEntries(raw string) (text string, isDir bool) {
	f := strings.Split(raw, "\x00")
	var lines []string
	for i := 0; i+4 < len(f); i += 5 {
		depth, typ, size, target, name := f[i], f[i+1], f[i+2], f[i+3], shown(f[i+4])
		if depth == "0" {
			isDir = typ == "d"
			continue
		}
		switch typ {
		case "d":
			lines = append(lines, name+"/")
		case "f":
			lines = append(lines, name+"\t"+size+" bytes")
		case "l":
			lines = append(lines, name+" -> "+shown(target))
		default:
			lines = append(lines, name+"\t("+kindName(typ)+")")
		}
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return "(empty directory)\n", isDir
	}
	return strings.Join(lines, "\n") + "\n", isDir
}

// shown quotes a name that would not read as itself on one line.
func shown(name string) string {
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return strconv.Quote(name)
		}
	}
	return name
}

func kindName(t string) string {
	switch t {
	case "p":
		return "fifo"
	case "s":
		return "socket"
	case "c":
		return "character device"
	case "b":
		return "block device"
	}
	return "type " + t
}

type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
	fitArgs
}

func (s *Server) search(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var a searchArgs
	if err := decode(ToolSearch, raw, &a); err != nil {
		return output{}, fitArgs{}, err
	}
	if a.Pattern == "" {
		return output{}, a.fitArgs, errs.Invalidf("search: pattern is required")
	}
	abs, err := s.decidePath(ctx, ToolSearch, mediator.KindRead, a.Path, ".")
	if err != nil {
		return output{}, a.fitArgs, err
	}
	r, err := s.inBox(ctx, []string{"grep", "-rnHIE", "--exclude-dir=.git", "-e", a.Pattern, "--", abs}, nil)
	if err != nil {
		return output{}, a.fitArgs, err
	}
	switch {
	case r.code == 1 && r.stdout == "":
		return output{text: fmt.Sprintf("no matches for %q in %s\n", a.Pattern, s.rel(abs))}, a.fitArgs, nil
	case r.code > 1 && r.stdout == "":
		return output{text: boxError(ToolSearch, s.rel(abs), r), isError: true}, a.fitArgs, nil
	}
	// Paths under the working directory are shown relative to it.
	text := strings.ReplaceAll(r.stdout, "\n"+s.o.World.Workdir+"/", "\n")
	text = strings.TrimPrefix(text, s.o.World.Workdir+"/")
	return output{text: text}, a.fitArgs, nil
}

func (s *Server) readResult(ctx context.Context, raw json.RawMessage) (output, fitArgs, error) {
	var m map[string]any
	if err := decode(ToolReadResult, raw, &m); err != nil {
		return output{}, fitArgs{}, err
	}
	a, err := offload.ArgsFrom(m)
	if err != nil {
		return output{}, fitArgs{}, err
	}
	if s.o.Offloader == nil {
		return output{}, fitArgs{}, errs.NotFoundf("read_result: this server keeps no results")
	}
	r, err := s.o.Offloader.ReadResult(ctx, s.o.Scope, a)
	if err != nil {
		return output{}, fitArgs{}, err
	}
	note := r.Note
	return output{text: r.Text, fitted: &mcp.FitMeta{Note: &note}}, fitArgs{}, nil
}

// decidePath makes p absolute and has the kernel decide the access.
func (s *Server) decidePath(ctx context.Context, tool string, kind mediator.Kind, p, def string) (string, error) {
	abs, err := s.path(tool, p, def)
	if err != nil {
		return "", err
	}
	if _, err := s.o.Kernel.Decide(ctx, mediator.Call{Kind: kind, Path: abs}); err != nil {
		return "", err
	}
	if s.afterDecide != nil {
		s.afterDecide(tool, abs)
	}
	return abs, nil
}

// boxError is what the model reads when a file tool's program failed.
func boxError(tool, path string, r boxResult) string {
	msg := strings.TrimSpace(r.stderr)
	// The programs name the absolute path; the model gave a relative one.
	if msg == "" {
		msg = fmt.Sprintf("exit code %d", r.code)
	}
	return fmt.Sprintf("%s %s: %s", tool, path, msg)
}
