package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/airlock-run/airlock/errs"
	jobwire "github.com/airlock-run/airlock/jobs/wire"
)

// readCalls reads a JSON array of calls, refusing a key given twice and
// a field no call has.
func readCalls(env *Env, file string) ([]jobwire.Call, error) {
	b, err := os.ReadFile(absFrom(env, file))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "--calls")
	}
	if err := jobwire.CheckJSON(b); err != nil {
		return nil, usagef("--calls %s: %v", file, errs.AgentMessage(err))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var calls []jobwire.Call
	if err := dec.Decode(&calls); err != nil {
		return nil, usagef("--calls %s: want a JSON array of calls: %v", file, err)
	}
	for i, c := range calls {
		if err := c.Validate(); err != nil {
			return nil, usagef("--calls %s: [%d]: %v", file, i, errs.AgentMessage(err))
		}
	}
	return calls, nil
}

func jobTraceCmd() *Command {
	const usage = "[--json] ID"
	const long = `Shows job ID's calls: for each its id, kind, what it named (never a body),
the node it ran on, the sandbox tier, the verdict and who decided, and the
rule and reason (a call the job's taint made wait says so). The header says
the nodes, the lowest tier any call ran at, the taint and whether an
outside event started the job.`
	return &Command{Name: "trace", Usage: usage, Short: "show a job's calls: node, tier, verdict, reason", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock job trace", usage, long)
			cf := addClientFlags(fs)
			asJSON := fs.Bool("json", false, "print JSON")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() != 1 {
				return usagef("one job ID (see airlock job trace --help)")
			}
			id := fs.Arg(0)
			if err := jobwire.CheckName("job id", id); err != nil {
				return usagef("%v", err)
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			var t jobwire.Trace
			if err := c.do(ctx, http.MethodGet, "/v1/jobs/"+id+"/trace", nil, &t); err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(env.Stdout).Encode(t)
			}
			printTrace(env.Stdout, t)
			return nil
		}}
}

// printTrace writes t as a header and a table, every text escaped for
// the terminal (a call line or a reason may hold anything).
func printTrace(w io.Writer, t jobwire.Trace) {
	lowest := "-"
	if t.LowestTier >= 0 {
		lowest = fmt.Sprint(t.LowestTier)
	}
	fmt.Fprintf(w, "job %s: nodes %s, lowest tier %s, outside event %v", t.Job, orDash(strings.Join(t.Nodes, " ")), lowest, t.OutsideEvent)
	if t.Open {
		fmt.Fprintf(w, ", open (released %v)", t.Released)
	}
	fmt.Fprintln(w)
	if t.Tainted {
		fmt.Fprintf(w, "tainted: %s\n", showText(t.Taint))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CALL\tKIND\tNODE\tTIER\tVERDICT\tDECIDER\tEXIT\tCALLED\tREASON")
	for _, c := range t.Calls {
		tier := fmt.Sprint(c.Tier)
		switch {
		case c.Node == "":
			tier = "-"
		case c.OptedOut:
			tier = "0 (opted out)"
		}
		exit := fmt.Sprint(c.ExitCode)
		if c.Ended.IsZero() {
			exit = "running"
		}
		reason := c.Reason
		switch {
		case c.Rule != "" && reason != "":
			reason = c.Rule + ": " + reason
		case c.Rule != "":
			reason = c.Rule
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", showText(c.ID), showText(c.Kind), orDash(c.Node), tier,
			orDash(showText(c.Verdict)), orDash(showText(c.Decider)), exit, showText(c.Call), orDash(showText(reason)))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func jobCallCmd() *Command {
	const usage = "ID [--shell] [--json] (-- CMD [ARG...] | --read PATH | --write PATH | --list [PATH] | --tool SERVER/TOOL [--args JSON])"
	const long = `Adds a call to open job ID (started with airlock job start --open) and
prints its output: CMD runs in the job's box (--shell: as one shell
string), --read prints the file at PATH, --write writes standard input to
PATH, --list lists a directory, --tool calls TOOL of the job's MCP server
SERVER (airlock job start --mcp) with the JSON object --args. The call runs on the job's node through
its kernel, after the calls before it, decided by the job's policy (a
person may be asked). The exit status is the call's own, 126 when it was
refused.`
	return &Command{Name: "call", Usage: usage, Short: "add a call to an open job", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock job call", usage, long)
			cf := addClientFlags(fs)
			shell := fs.Bool("shell", false, "run CMD as one shell string")
			read := fs.String("read", "", "read the file at `path`")
			write := fs.String("write", "", "write standard input to the file at `path`")
			list := fs.Bool("list", false, "list the directory PATH (default: the working directory)")
			tool := fs.String("tool", "", "call the tool `SERVER/TOOL` of one of the job's MCP servers")
			toolArgs := fs.String("args", "", "with --tool: the tool's arguments, a JSON `object`")
			asJSON := fs.Bool("json", false, "print the call's result as JSON")
			// The job id comes first (airlock job call ID --read x), or
			// after the flags.
			var id string
			if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				id, args = args[0], args[1:]
			}
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			rest := fs.Args()
			if id == "" {
				if len(rest) == 0 {
					return usagef("no job ID (see airlock job call --help)")
				}
				id, rest = rest[0], rest[1:]
			}
			if err := jobwire.CheckName("job id", id); err != nil {
				return usagef("%v", err)
			}
			var call jobwire.Call
			var err error
			if *tool != "" || *toolArgs != "" {
				if len(rest) > 0 || *shell || *read != "" || *write != "" || *list {
					return usagef("name one call: -- CMD, --read PATH, --write PATH, --list [PATH] or --tool SERVER/TOOL")
				}
				call, err = toolCall(*tool, *toolArgs)
			} else {
				call, err = callFrom(env, rest, *shell, *read, *write, *list)
			}
			if err != nil {
				return err
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			var r jobwire.CallResult
			if err := c.do(ctx, http.MethodPost, "/v1/jobs/"+id+"/calls", call, &r); err != nil {
				return err
			}
			if r.Call == "" {
				return errs.Unavailablef("job %s: the call had not ended when the server stopped waiting; read it with airlock job trace %s", id, id)
			}
			if *asJSON {
				if err := json.NewEncoder(env.Stdout).Encode(r); err != nil {
					return err
				}
			} else {
				if r.Refused {
					fmt.Fprintf(env.Stderr, "airlock job call: refused: %s\n", showText(r.Reason))
				}
				io.WriteString(env.Stdout, r.Stdout)
				io.WriteString(env.Stdout, r.Text)
				io.WriteString(env.Stderr, r.Stderr)
			}
			if r.ExitCode != 0 {
				return &ExitError{Code: r.ExitCode}
			}
			return nil
		}}
}

// callFrom is the call the flags and arguments name: exactly one of a
// command, --read, --write or --list.
func callFrom(env *Env, cmd []string, shell bool, read, write string, list bool) (jobwire.Call, error) {
	named := 0
	for _, set := range []bool{len(cmd) > 0 && !list, read != "", write != "", list} {
		if set {
			named++
		}
	}
	if named != 1 {
		return jobwire.Call{}, usagef("name one call: -- CMD, --read PATH, --write PATH or --list [PATH]")
	}
	switch {
	case read != "":
		return jobwire.Call{Kind: jobwire.CallReadFile, Path: read}, nil
	case write != "":
		b, err := io.ReadAll(io.LimitReader(env.Stdin, jobwire.OutputCap+1))
		if err != nil {
			return jobwire.Call{}, errs.Wrap(errs.Invalid, err, "--write: standard input")
		}
		if len(b) > jobwire.OutputCap {
			return jobwire.Call{}, usagef("--write: standard input is over %d bytes", jobwire.OutputCap)
		}
		return jobwire.Call{Kind: jobwire.CallWriteFile, Path: write, Content: string(b)}, nil
	case list:
		path := ""
		if len(cmd) > 0 {
			path = cmd[0]
		}
		return jobwire.Call{Kind: jobwire.CallList, Path: path}, nil
	case shell:
		return jobwire.Call{Kind: jobwire.CallShell, Command: strings.Join(cmd, " ")}, nil
	}
	return jobwire.Call{Kind: jobwire.CallExec, Argv: cmd}, nil
}

// toolCall is the tool call --tool SERVER/TOOL --args JSON names.
func toolCall(tool, args string) (jobwire.Call, error) {
	server, name, ok := strings.Cut(tool, "/")
	if !ok || server == "" || name == "" {
		return jobwire.Call{}, usagef("--tool %q: want SERVER/TOOL (a server the job was started with, --mcp)", tool)
	}
	c := jobwire.Call{Kind: jobwire.CallTool, Server: server, Tool: name}
	if args != "" {
		if err := jobwire.CheckJSON([]byte(args)); err != nil {
			return c, usagef("--args: %v", errs.AgentMessage(err))
		}
		c.Args = json.RawMessage(args)
	}
	if err := c.Validate(); err != nil {
		return c, usagef("%v", errs.AgentMessage(err))
	}
	return c, nil
}

// readMCP reads --mcp FILE: a JSON object of the job's MCP servers, each
// name to its stdio command's argv.
func readMCP(env *Env, file string) (map[string][]string, error) {
	b, err := os.ReadFile(absFrom(env, file))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "--mcp")
	}
	if err := jobwire.CheckJSON(b); err != nil {
		return nil, usagef("--mcp %s: %v", file, errs.AgentMessage(err))
	}
	var servers map[string][]string
	if err := json.Unmarshal(b, &servers); err != nil || servers == nil {
		return nil, usagef(`--mcp %s: want a JSON object of servers, each name to its command's argv ({"fs": ["mcp-server-filesystem", "."]})`, file)
	}
	return servers, nil
}

func jobReleaseCmd() *Command {
	return jobActionCmd("release", "end an open job once its calls are done")
}
