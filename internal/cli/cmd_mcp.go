package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/internal/wiring"
)

// mcpTool is the binary that runs `airlock mcp ...`: it links the MCP SDK
// (and its gob, JSON Schema and OAuth packages), whose start every
// `airlock run` would otherwise pay for.
var mcpTool = helperBinary{name: "airlock-mcp", runs: "the MCP front ends run", links: "the MCP SDK", static: true}

// mcpCmd groups airlock's MCP entry points: serve (airlock's own tools) and
// wrap (a gateway in front of another MCP server). Their help and the list
// of them are this binary's; running one is the airlock-mcp binary's, which
// sets Env.MCP: here each hands its arguments to the airlock-mcp beside
// this binary. An MCP client's standard input and output pass through the
// exec unchanged, so a client configured with `airlock mcp serve` talks to
// airlock-mcp directly.
func mcpCmd() *Command {
	return &Command{Name: "mcp", Usage: "COMMAND [ARGS]", Short: "MCP server and gateway",
		Sub: []*Command{
			mcpStub("serve", MCPServeUsage, "serve airlock's own tools over MCP", MCPServeHelp),
			mcpStub("wrap", MCPWrapUsage, "run another MCP server in a box and mediate its tools", MCPWrapHelp),
		}}
}

// mcpStub is `airlock mcp name`: Env.MCP's command where the binary set
// one (airlock-mcp), else the airlock-mcp beside this binary in this
// process's place.
func mcpStub(name, usage, short, long string) *Command {
	return &Command{Name: name, Usage: usage, Short: short, Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			if run := env.MCP[name]; run != nil {
				return run(ctx, env, args)
			}
			return handOverOrHelp(env, mcpTool, []string{"mcp", name}, usage, long, args)
		}}
}

// storeTool is the binary that runs the commands that open the file store
// (files, read-result): airlock-mcp links SQLite (files/sqldriver), which
// the airlock binary leaves out since no `airlock run` opens a store.
var storeTool = helperBinary{name: "airlock-mcp", runs: "the file store's commands run", links: "SQLite (files/sqldriver)", static: true}

// handOverOrHelp runs the command path (its words after "airlock") with
// args in the helper binary b, in this process's place. Where b cannot be
// run, --help still prints the command's help (all but its flags, which
// are b's) and the fix; anything else is the one-line failure.
func handOverOrHelp(env *Env, b helperBinary, path []string, usage, long string, args []string) error {
	err := handOver(env, b, append(append([]string(nil), path...), args...))
	if len(args) == 1 && isHelpArg(args[0]) {
		fmt.Fprintf(env.Stdout, "Usage: airlock %s %s\n\n%s\n\nFlags: %s lists them; %v\n", strings.Join(path, " "), usage, strings.TrimSpace(long), b.name, err)
		return flag.ErrHelp
	}
	return err
}

// isHelpArg reports whether a is a request for help, as the flag package
// reads one.
func isHelpArg(a string) bool {
	switch a {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// MCPWrapUsage and MCPWrapHelp are `airlock mcp wrap`'s synopsis and help,
// for the airlock-mcp binary that runs it (internal/mcpcli).
const MCPWrapUsage = "[flags] [--http ADDR [--token-file FILE | --no-auth] ...] -- CMD [ARG...]"

const MCPWrapHelp = `Start the MCP server CMD (stdio) inside a box made from the policy (its files;
its network only through the egress proxy) and serve it to an MCP client on
standard input and output, or over streamable HTTP with --http ADDR (one
boxed server per session).

Every tools/call is decided by the policy's tools section before it reaches
the server (tool names as listed, or PREFIX.name with --name PREFIX); a denied
tool is left out of tools/list and a call to it anyway is refused with a JSON-RPC
error (code -32001) whose data is {"code":"POLICY_DENIED","category":"tools",
"reason":...}. Tool definitions are pinned when first seen (in the user's state
directory); a changed one is blocked until a person approves it. Results too big
for a model are kept in the file store and read back with read_result. Everything
else passes through unchanged.

CMD itself is decided as a command by the policy's shell section.

` + MCPHTTPHelp + mcpBinaryHelp

// MCPServeUsage and MCPServeHelp are `airlock mcp serve`'s synopsis and
// help, for the airlock-mcp binary that runs it (internal/mcpcli).
const MCPServeUsage = "[--policy FILE] [--workdir DIR] [--mode observe|fix] [--sandbox auto|off|1|2] [--http ADDR [--token-file FILE | --no-auth] ...]"

const MCPServeHelp = `Serve airlock's own tools over MCP: exec (argv, or a shell string where the
policy's shell.raw allows), read_file, write_file, list_dir, search and
read_result. Every call is decided by the policy (as 'airlock run' decides),
escalations go to the person at the MCP client (elicitation, when the client
supports it and --elicit is not false) or through 'airlock approvals', and
are denied at the timeout, commands and file tools run in the sandbox, and writes happen only
in fix mode. A refusal is a JSON-RPC error with code POLICY_DENIED and a
reason. Every tool takes view, budget and query to fit its answer; an answer
over the offload threshold is kept in the file store and the model gets a
stub to read parts of with read_result.

MCP speaks on standard input and output unless --http ADDR is given.

` + MCPHTTPHelp + `

` + storeHelp + mcpBinaryHelp

// MCPHTTPHelp is the help of the HTTP transport both MCP commands take.
const MCPHTTPHelp = `With --http ADDR, MCP's streamable HTTP transport is served at http://ADDR/mcp
instead of standard input and output. ADDR is a loopback address unless
--allow-host names the host names clients use. Every request must carry
"Authorization: Bearer TOKEN": airlock makes a token and prints it once on
standard error, or reads it from --token-file FILE (a regular file of yours
that only you may read: chmod 600). --no-auth, only on a loopback address,
lets every local process in. A request with a wrong or no token gets 401, one
whose Host or Origin is not loopback (or a name of --allow-host) 403, one
whose body is over 8 MiB 413; nothing is started for any of them.

A client is a remote address. Sessions and boxes are capped per client and
in all (--max-client-sessions, --max-sessions, --max-client-boxes,
--max-boxes): over a cap, an initialize gets 429 and a call a JSON-RPC error
that names the flag to raise, and nothing is started. mcp wrap runs one box
per session; mcp serve one per running tools/call. A session no request has
touched for --session-idle is ended, and its boxes with it.`

const mcpBinaryHelp = `

The MCP commands are the airlock-mcp binary, which links the MCP SDK that
the airlock binary leaves out: airlock mcp runs the airlock-mcp beside this
binary (never one on PATH) with the same arguments and standard streams.`

// KernelFlags are the kernel's flags and the file store's, for the MCP
// commands of the airlock-mcp binary (internal/mcpcli): they read the
// policy, the mode, the tier, the audit log and the store as run does.
type KernelFlags struct{ k *kernelFlags }

// AddKernelFlags defines the kernel's and the store's flags on fs; of
// names what the working directory belongs to in the help ("the calls").
func AddKernelFlags(fs *flag.FlagSet, of string) *KernelFlags {
	k := addKernelFlags(fs, of)
	k.store = addStoreFlags(fs)
	return &KernelFlags{k: k}
}

// Build wires the kernel the flags name, for cmd; terminal says whether a
// person may be asked on this terminal, with (when set) adds to the
// configuration.
func (k *KernelFlags) Build(env *Env, cmd string, terminal bool, with func(*wiring.Config)) (*wiring.Kernel, error) {
	return k.k.build(env, cmd, terminal, with)
}

// OpenStore opens the file store the flags name.
func (k *KernelFlags) OpenStore(env *Env) (*files.Store, files.Scope, error) {
	return k.k.store.open(env)
}

// stateDir is airlock's directory of the user's state.
func stateDir(env *Env) (string, error) {
	if d := env.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock"), nil
	}
	if h := env.Getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "airlock"), nil
	}
	return "", errs.Unavailablef("mcp pins: neither XDG_STATE_HOME nor HOME is an absolute path (set --pins)")
}

// StateDir is stateDir, for the node's check that no job's policy reaches
// airlock's own state and for mcp wrap's pins.
func StateDir(env *Env) (string, error) { return stateDir(env) }
