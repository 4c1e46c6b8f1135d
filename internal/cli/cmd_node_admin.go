package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"

	apiwire "github.com/airlock-run/airlock/api/wire"
	"github.com/airlock-run/airlock/approvals"
	jobwire "github.com/airlock-run/airlock/jobs/wire"
)

// nodeAdminCmds are the commands about the server's nodes.
func nodeAdminCmds() []*Command {
	return []*Command{nodeListCmd(), nodeOptOutCmd()}
}

func nodeListCmd() *Command {
	const usage = "[--server URL] [--token-file FILE] [--json]"
	return &Command{Name: "list", Usage: usage, Short: "list the server's nodes, their tiers and health",
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock node list", usage, "")
			cf := addClientFlags(fs)
			asJSON := fs.Bool("json", false, "print JSON")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return usagef("airlock node list takes no arguments")
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			var nodes []apiwire.NodeEntry
			if err := c.do(ctx, http.MethodGet, "/v1/nodes", nil, &nodes); err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(env.Stdout).Encode(nodes)
			}
			for _, n := range nodes {
				live := "live"
				if !n.Live {
					live = "LOST"
				}
				fmt.Fprintf(env.Stdout, "%s  pool %s  tier %d  %s\n", approvals.Show(n.ID), approvals.Show(n.Pool), n.Tier, live)
				for _, h := range n.Health {
					fmt.Fprintf(env.Stdout, "  health: %s\n", showText(h))
				}
			}
			return nil
		}}
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments, and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := ParseFlags(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// showText is a sentence from the server for a terminal: as it is when
// every rune prints (ASCII), else escaped and quoted, so no escape
// sequence a node or a job put in it reaches the terminal.
func showText(s string) string {
	for _, r := range s {
		if r < 0x20 || r >= 0x7f {
			return approvals.Show(s)
		}
	}
	return s
}

func nodeOptOutCmd() *Command {
	const usage = "NODE (--reason TEXT | --approve | --end) [--server URL] [--token-file ADMIN-TOKEN-FILE] [--json]"
	const long = `Opts NODE out of the sandbox (admin): while the opt-out holds the node may
take floor work from jobs started from inside, unconfined where it has no
sandbox, and every run there is marked tier 0 in its job and audited
(run.sandbox.tier0); it never takes work an outside event started, or any
tainted job. The node is a health finding in airlock node list meanwhile.

With the server's --four-eyes the opt-out holds only once a second,
different admin approves it (--approve). --end ends it at once. Each step
is audited as tenant.sandbox_optout. --token-file names an admin's token
file (the server's admin-token, or a file of one "NAME TOKEN" line).`
	return &Command{Name: "sandbox-optout", Usage: usage, Short: "opt a node out of the sandbox, approve or end it (admin)", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock node sandbox-optout", usage, long)
			cf := addClientFlags(fs)
			reason := fs.String("reason", "", "why the node may run floor work unconfined")
			approve := fs.Bool("approve", false, "approve another admin's pending opt-out")
			end := fs.Bool("end", false, "end the node's opt-out at once")
			asJSON := fs.Bool("json", false, "print JSON")
			pos, err := parseInterleaved(fs, args)
			if err != nil {
				return err
			}
			if len(pos) != 1 {
				return usagef("want one NODE (see airlock node sandbox-optout --help)")
			}
			if err := jobwire.CheckName("NODE", pos[0]); err != nil {
				return usagef("%v", err)
			}
			if n := btoi(*end) + btoi(*approve) + btoi(*reason != ""); n != 1 {
				return usagef("give exactly one of --reason TEXT, --approve and --end")
			}
			if *cf.tokenFile == "" && env.Getenv("AIRLOCK_TOKEN_FILE") == "" {
				dir, err := FleetDir(env, "", "server")
				if err != nil {
					return err
				}
				*cf.tokenFile = dir + "/admin-token"
			}
			c, err := newAPIClient(env, cf)
			if err != nil {
				return err
			}
			var out map[string]any
			req := apiwire.OptOutRequest{Reason: *reason, End: *end, Approve: *approve}
			if err := c.do(ctx, http.MethodPost, "/v1/nodes/"+pos[0]+"/sandbox-optout", req, &out); err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(env.Stdout).Encode(out)
			}
			switch {
			case *end:
				fmt.Fprintf(env.Stdout, "node %s: sandbox opt-out ended\n", pos[0])
			case out["pending"] == true:
				fmt.Fprintf(env.Stdout, "node %s: sandbox opt-out asked for; it holds once a second admin runs: airlock node sandbox-optout %s --approve\n", pos[0], pos[0])
			default:
				fmt.Fprintf(env.Stdout, "node %s: sandbox opt-out holds: floor work from inside may run there unconfined, marked tier 0\n", pos[0])
			}
			return nil
		}}
}

// serverApprovals lists the server's pending approvals, for airlock
// approvals list --server.
func serverApprovals(ctx context.Context, env *Env, cf *clientFlags, job string, asJSON bool) error {
	c, err := newAPIClient(env, cf)
	if err != nil {
		return err
	}
	qs, err := c.questions(ctx, job)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(qs)
	}
	if len(qs) == 0 {
		fmt.Fprintln(env.Stdout, "no pending escalations")
		return nil
	}
	for _, q := range qs {
		fmt.Fprintf(env.Stdout, "%s  (job %s on node %s, denied at %s)\n", approvals.Show(q.ID), approvals.Show(q.Job), approvals.Show(q.Node), q.Deadline.Format("15:04:05"))
		fmt.Fprintf(env.Stdout, "  call:   %s\n", showText(q.Call))
		fmt.Fprintf(env.Stdout, "  why:    %s\n", showText(q.Reason))
		if q.Rule != "" {
			fmt.Fprintf(env.Stdout, "  rule:   %s\n", approvals.Show(q.Rule))
		}
		fmt.Fprintf(env.Stdout, "  digest: %s\n", approvals.Show(q.Digest))
	}
	return nil
}

// serverDecide answers question id on the server. The answer is bound to
// the question's digest: --digest pins the one the person saw; without it
// the digest listed now is used, and the call it stands for is printed
// first.
func serverDecide(ctx context.Context, env *Env, cf *clientFlags, id, answer, digest, job string, asJSON bool) error {
	if answer != jobwire.AnswerAllowOnce && answer != jobwire.AnswerDeny {
		return usagef("a server's escalation is answered allow-once or deny, not %s", approvals.Show(answer))
	}
	c, err := newAPIClient(env, cf)
	if err != nil {
		return err
	}
	if digest == "" {
		qs, err := c.questions(ctx, job)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.ID == id {
				digest, job = q.Digest, q.Job
				if !asJSON {
					fmt.Fprintf(env.Stdout, "%s: %s\n", approvals.Show(id), showText(q.Call))
				}
			}
		}
		if digest == "" {
			return usagef("no escalation %s waits on the server (airlock approvals list --server URL)", approvals.Show(id))
		}
	}
	var out map[string]string
	if err := c.do(ctx, http.MethodPost, "/v1/approvals/"+id, apiwire.AnswerRequest{Answer: answer, Digest: digest, Job: job}, &out); err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(out)
	}
	word := map[string]string{jobwire.AnswerAllowOnce: "allowed once", jobwire.AnswerDeny: "denied"}[answer]
	fmt.Fprintf(env.Stdout, "%s: %s\n", approvals.Show(id), strings.TrimSpace(word))
	return nil
}

// questions lists the server's waiting questions: job's, read from its
// workflow, when job is given.
func (c *apiClient) questions(ctx context.Context, job string) ([]jobwire.Question, error) {
	path := "/v1/approvals"
	if job != "" {
		if err := jobwire.CheckName("--job", job); err != nil {
			return nil, usagef("%v", err)
		}
		path += "?job=" + job
	}
	var qs []jobwire.Question
	err := c.do(ctx, http.MethodGet, path, nil, &qs)
	return qs, err
}
