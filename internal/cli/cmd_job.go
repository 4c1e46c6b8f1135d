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
	"time"

	apiwire "github.com/airlock-run/airlock/api/wire"
	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/errs"
	jobwire "github.com/airlock-run/airlock/jobs/wire"
)

func jobCmd() *Command {
	return &Command{Name: "job", Usage: "COMMAND", Short: "start, read and kill the fleet's jobs",
		Long: `Jobs run on the fleet's nodes, routed by sandbox tier. A job's command may
run a shell, so it waits on its pool's floor queue for a node with sandbox
tier 1; --tier0 lets a job started from inside run on any node of its pool.`,
		Sub: []*Command{jobStartCmd(), jobGetCmd(), jobListCmd(), jobKillCmd(), jobTraceCmd(), jobCallCmd(), jobReleaseCmd(), jobFilesCmd()}}
}

// killCmd is the kill switch for an agent: every running job it acts for,
// on whichever node runs it.
func killCmd() *Command {
	const usage = "--agent NAME [--json]"
	const long = `Kills every running job of agent NAME (started with --agent NAME): each
job's node sees the kill on its next heartbeat (within a second) and tears
the box down, its whole process tree and cgroup. Prints the jobs killed.`
	return &Command{Name: "kill", Usage: usage, Short: "kill every running job of an agent", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock kill", usage, long)
			cf := addClientFlags(fs)
			agent := fs.String("agent", "", "the `name` of the agent to stop")
			asJSON := fs.Bool("json", false, "print JSON")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 || *agent == "" {
				return usagef("airlock kill --agent NAME (see airlock kill --help)")
			}
			if err := jobwire.CheckName("--agent", *agent); err != nil {
				return usagef("%v", err)
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			var k apiwire.Killed
			if err := c.do(ctx, http.MethodPost, "/v1/agents/"+*agent+"/kill", nil, &k); err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(env.Stdout).Encode(k)
			}
			fmt.Fprintf(env.Stderr, "airlock kill: agent %s: %d running job(s) killed\n", k.Agent, len(k.Jobs))
			for _, id := range k.Jobs {
				fmt.Fprintln(env.Stdout, id)
			}
			return nil
		}}
}

func jobStartCmd() *Command {
	const usage = "[--pool P] [--policy FILE] [--mode observe|fix] [--tier0] [--model NAME] [--parent JOB] [--agent NAME] [--idempotent [--retry N]] [--claim-timeout D] [--calls FILE] [--mcp FILE] [--open [--idle D]] [--wait] [--json] [-- CMD [ARG...]]"
	const long = `Starts a job that runs CMD on a node of pool P, decided against the policy
FILE (default: the built-in workspace profile), which travels with the job:
the node decides against it, never against its own. --shell runs CMD as one
shell string. Prints the job's id, or with --wait its result; the exit
status with --wait is the command's own, 126 when it was refused.

--agent NAME names the agent the job acts for: airlock kill --agent NAME
stops every running job of it. A job runs at most once: when its node is
lost mid-run it fails naming the node, unless it is marked --idempotent
(running it twice does no harm) and allows --retry N more runs.

--calls FILE gives the job's calls instead of CMD: a JSON array of calls
({"kind": "exec", "argv": [...]}, "shell", "read_file", "write_file",
"list", "read_result", "tool"), run in order through one kernel on the
node that claims the job. --mcp FILE names the job's MCP servers
({"fs": ["mcp-server-filesystem", "."]}); a tool call ({"kind": "tool",
"server": "fs", "tool": "read_file", "args": {...}}) starts its server in a
box of the job's kernel on first use, decided by the job's policy (its
shell section for the command, its tools section as fs.read_file), and
the server stays up until the job ends. --open makes the job a lease: after its calls (CMD, --calls
or none) it waits for more (airlock job call ID ...) until airlock job
release ID, or until it was idle for --idle (default 10m).`
	return &Command{Name: "start", Usage: usage, Short: "start a job", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock job start", usage, long)
			cf := addClientFlags(fs)
			pool := fs.String("pool", jobwire.DefaultPool, "the `pool` to run in")
			pol := fs.String("policy", "", "policy `file` the job is decided against")
			mode := fs.String("mode", "observe", "observe or fix")
			tier0 := fs.Bool("tier0", false, "let the job run on a node without a sandbox (tier 0)")
			model := fs.String("model", "", "the `model` the job's agent may use (one the tenant has not vetted makes the job tier 1 only and tainted)")
			parent := fs.String("parent", "", "the `job` starting this one (its taint and floor carry over)")
			shell := fs.Bool("shell", false, "run CMD as one shell string")
			claim := fs.Duration("claim-timeout", 0, "how long to wait for an eligible node (default: the server's)")
			agent := fs.String("agent", "", "the `name` of the agent the job acts for")
			idem := fs.Bool("idempotent", false, "running the job twice does no harm")
			retry := fs.Int("retry", 0, "with --idempotent: run the job again up to `N` times when its node is lost")
			callsFile := fs.String("calls", "", "a JSON `file` of the job's calls, instead of CMD")
			mcpFile := fs.String("mcp", "", "a JSON `file` of the job's MCP servers for its tool calls: each name to its command's argv")
			open := fs.Bool("open", false, "keep the job open for more calls (airlock job call)")
			idle := fs.Duration("idle", 0, "with --open: end the job after this long without a call (default 10m)")
			wait := fs.Bool("wait", false, "wait for the job to end and print its result")
			asJSON := fs.Bool("json", false, "print JSON")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() == 0 && *callsFile == "" && !*open {
				return usagef("no command (airlock job start [FLAGS] -- CMD [ARG...], or --calls FILE, or --open)")
			}
			if *idle != 0 && !*open {
				return usagef("--idle: only an --open job waits for calls")
			}
			if *retry != 0 && !*idem {
				return usagef("--retry %d: only a job marked --idempotent runs again (a command may have written or sent before its node died)", *retry)
			}
			req := apiwire.StartRequest{Pool: *pool, Mode: *mode, Tier0: *tier0, Model: *model, Parent: *parent, Agent: *agent, Idempotent: *idem, Retries: *retry}
			switch {
			case fs.NArg() == 0:
			case *shell:
				req.Command = strings.Join(fs.Args(), " ")
			default:
				req.Argv = fs.Args()
			}
			req.Open = *open
			if *idle > 0 {
				req.IdleTimeout = idle.String()
			}
			if *callsFile != "" {
				calls, err := readCalls(env, *callsFile)
				if err != nil {
					return err
				}
				req.Calls = calls
			}
			if *mcpFile != "" {
				servers, err := readMCP(env, *mcpFile)
				if err != nil {
					return err
				}
				req.MCP = servers
			}
			if *claim > 0 {
				req.ClaimTimeout = claim.String()
			}
			if *pol != "" {
				b, err := os.ReadFile(absFrom(env, *pol))
				if err != nil {
					return errs.Wrap(errs.Invalid, err, "--policy")
				}
				req.Policy = string(b)
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			var st apiwire.Started
			if err := c.do(ctx, http.MethodPost, "/v1/jobs", req, &st); err != nil {
				return err
			}
			if !*wait {
				if *asJSON {
					return json.NewEncoder(env.Stdout).Encode(st)
				}
				fmt.Fprintln(env.Stdout, st.ID)
				return nil
			}
			return c.printJob(ctx, env, st.ID, true, *asJSON)
		}}
}

func jobGetCmd() *Command {
	const usage = "[--wait] [--json] ID"
	return &Command{Name: "get", Usage: usage, Short: "show a job's state and result",
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock job get", usage, "")
			cf := addClientFlags(fs)
			wait := fs.Bool("wait", false, "wait for the job to end")
			asJSON := fs.Bool("json", false, "print JSON")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() != 1 {
				return usagef("one job ID (see airlock job get --help)")
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			return c.printJob(ctx, env, fs.Arg(0), *wait, *asJSON)
		}}
}

func jobListCmd() *Command {
	const usage = "[--running] [--json]"
	return &Command{Name: "list", Usage: usage, Short: "list the fleet's jobs (from Temporal, so a server restart loses none)",
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock job list", usage, "")
			cf := addClientFlags(fs)
			asJSON := fs.Bool("json", false, "print JSON")
			running := fs.Bool("running", false, "only the jobs still running")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			path := "/v1/jobs"
			if *running {
				path += "?running=1"
			}
			var list []apiwire.JobView
			if err := c.do(ctx, http.MethodGet, path, nil, &list); err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(env.Stdout).Encode(list)
			}
			for _, j := range list {
				node := "-"
				if j.Result != nil {
					node = j.Result.Node
				}
				fmt.Fprintf(env.Stdout, "%s  %-9s  %-16s  %-10s  %s\n", j.ID, j.State, j.Queue, node, j.Command)
			}
			return nil
		}}
}

func jobKillCmd() *Command {
	return jobActionCmd("kill", "kill a job: its node tears the box down")
}

// jobActionCmd is `airlock job NAME ID`: POST /v1/jobs/ID/NAME.
func jobActionCmd(name, short string) *Command {
	const usage = "ID"
	return &Command{Name: name, Usage: usage, Short: short,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock job "+name, usage, "")
			cf := addClientFlags(fs)
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() != 1 {
				return usagef("one job ID (see airlock job %s --help)", name)
			}
			if err := jobwire.CheckName("job id", fs.Arg(0)); err != nil {
				return usagef("%v", err)
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			return c.do(ctx, http.MethodPost, "/v1/jobs/"+fs.Arg(0)+"/"+name, nil, nil)
		}}
}

// printJob prints job id; for a job that ended with a result the exit
// status is the command's.
func (c *apiClient) printJob(ctx context.Context, env *Env, id string, wait, asJSON bool) error {
	if err := jobwire.CheckName("job id", id); err != nil {
		return usagef("%v", err)
	}
	path := "/v1/jobs/" + id
	if wait {
		path += "?wait=1"
	}
	var v apiwire.JobView
	if err := c.do(ctx, http.MethodGet, path, nil, &v); err != nil {
		return err
	}
	if asJSON {
		if err := json.NewEncoder(env.Stdout).Encode(v); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(env.Stdout, "job %s: %s (queue %s, floor tier %d)\n", v.ID, v.State, v.Queue, v.Floor)
		if v.OutsideEvent {
			fmt.Fprintf(env.Stdout, "started by an outside event (%s)\n", approvals.Show(v.Source))
		}
		if v.Tainted {
			fmt.Fprintf(env.Stdout, "tainted: %s\n", showText(v.Taint))
		}
		for _, n := range v.Notes {
			fmt.Fprintf(env.Stdout, "note: %s\n", showText(n))
		}
		if r := v.Result; r != nil {
			fmt.Fprintf(env.Stdout, "node %s, tier %d, exit %d\n", r.Node, r.Tier, r.ExitCode)
			if len(r.Calls) > 0 {
				fmt.Fprintf(env.Stdout, "%d calls, lowest tier %d (airlock job trace %s)\n", len(r.Calls), r.Tier, v.ID)
			}
			if r.Refused {
				fmt.Fprintf(env.Stdout, "refused: %s\n", r.Reason)
			}
			io.WriteString(env.Stdout, r.Stdout)
			io.WriteString(env.Stderr, r.Stderr)
		}
		if v.Error != "" {
			fmt.Fprintf(env.Stdout, "error: %s\n", v.Error)
		}
	}
	switch {
	case v.Result != nil && v.Result.ExitCode != 0:
		return &ExitError{Code: v.Result.ExitCode}
	case v.State != "completed" && v.State != "running":
		return &ExitError{Code: 1}
	}
	return nil
}

// apiClient calls the server's API with its bearer token.
type apiClient struct {
	base, token string
	http        *http.Client
}

func newAPIClient(env *Env, cf *clientFlags) (*apiClient, error) {
	server, token, err := cf.resolve(env)
	if err != nil {
		return nil, err
	}
	hc, err := cf.apiHTTP(env, server, 11*time.Minute)
	if err != nil {
		return nil, err
	}
	return &apiClient{base: strings.TrimRight(server, "/"), token: token, http: hc}, nil
}

// do sends body as JSON and decodes the answer into out; an error status
// is an error of the class it stands for, with the server's message.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return usagef("--server %q: %v", c.base, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "the server at %s", c.base)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		json.Unmarshal(b, &e)
		return errs.New(classOfStatus(resp.StatusCode), "%s", firstNonEmpty(e.Error, resp.Status))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return errs.Wrap(errs.Unavailable, err, "the server's answer")
	}
	return nil
}

func classOfStatus(code int) errs.Class {
	switch {
	case code == http.StatusNotFound:
		return errs.NotFound
	case code == http.StatusForbidden:
		return errs.Denied
	case code >= 400 && code < 500:
		return errs.Invalid
	}
	return errs.Unavailable
}
