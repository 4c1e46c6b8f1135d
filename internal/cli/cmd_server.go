package cli

import (
	"context"
	"slices"
	"strings"

	"github.com/airlock-run/airlock/errs"
)

// DefaultServerAddr is where `airlock server` listens and clients look.
const DefaultServerAddr = "127.0.0.1:8420"

// ServerUsage and ServerHelp are `airlock server`'s synopsis and help, for
// the airlock-server binary that runs it too (internal/fleetcli).
const ServerUsage = "[--listen IP:PORT [--insecure-listen]] [--state DIR] [--token-file FILE] [--admin-token-file FILE] [--enroll-token-file FILE] [--node-cert-lifetime D] [--temporal-listen IP | --temporal HOST:PORT [--namespace N] --temporal-tls-cert F --temporal-tls-key F --temporal-tls-ca F --temporal-authorizer airlock] [--claim-timeout D] [--max-wall D] [--max-memory SIZE] [--hooks FILE] [--tenants-file FILE] [--pool-quota POOL=N ...] [--tenant-quota TENANT=N ...] [--four-eyes] [--vetted-models A,B | --vetted-models-file FILE] [--dev]"

const ServerHelp = `Runs the fleet's server: an embedded Temporal dev server (persisted to a
SQLite file under the state directory, listening on loopback only) and the
HTTP JSON API on loopback behind bearer tokens of two roles, each created
with a random token when missing: the operator's (--token-file, default
STATE/token: jobs and approvals) and the admins' (--admin-token-file,
default STATE/admin-token, one "NAME TOKEN" a line: also sandbox opt-outs
and nodes). A node has a token of its own, issued at its enrolment, that
only registers it and raises its runs' questions. The server keeps its
audit log in STATE/audit.jsonl.

  POST /v1/jobs, GET /v1/jobs, GET /v1/jobs/{id}, POST /v1/jobs/{id}/kill
  POST /v1/nodes, GET /v1/nodes, POST /v1/nodes/{id}/sandbox-optout (admin)
  GET /v1/approvals, POST /v1/approvals/{id}, GET /v1/audit?job=ID
  POST /v1/files?job=ID, GET /v1/files/REF?job=ID, GET /v1/files?job=ID
                        the files of a job's tree (STATE/files); a node
                        only for a job it runs now
  POST /v1/hooks/NAME   an outside event: starts hook NAME's job with the
                        body as its input, tainted, on a tier-1 node only

--hooks FILE names the hooks, as JSON:
  {"deploy": {"pool": "ci", "argv": ["./deploy.sh"], "policy": "deploy.yaml"}}
(policy is a file, read when the server starts, relative to FILE).

The server routes jobs and never runs one: every call of a job is decided
and run on the node that claimed it, at that node's sandbox tier. Every
job can run a shell, so it waits on its pool's floor queue for a node with
sandbox tier 1 unless it was started with --tier0; one that no eligible node
claims within --claim-timeout fails with the reason and the fix.

Nodes connect to Temporal with mutual TLS only. On first start the server
makes the fleet's CA under STATE/pki (ca.key, 0600) and an enrolment token
(--enroll-token-file, default STATE/enroll-token, separate from the API
token). A node enrols with it (POST /v1/nodes/enroll: a CSR for a key made
on the node) and gets a certificate naming its id and pool, valid for
--node-cert-lifetime; it then registers with its selftest rows signed by
that key, and the server records the lowest of the tier it claims and the
tier the rows prove. The Temporal authorizer lets a node poll its pool's
floor queue only at that attested tier. --temporal-listen IP puts the
frontend where nodes of other machines reach it (mutual TLS only).

--temporal HOST:PORT uses an existing Temporal cluster instead of the
embedded one (none is started), in --namespace N (default airlock);
nodes are told its address when they enrol and register, and connect to
it with their fleet certificates. The server connects with
--temporal-tls-cert and --temporal-tls-key, trusting --temporal-tls-ca
only. Only the cluster decides which node may poll a floor queue, and
airlock cannot check how from outside, so it refuses to start without
the three TLS flags (a cluster without mutual TLS lets any process poll
floor queues) and without --temporal-authorizer airlock, the statement
that the cluster's Temporal server is built with jobs/server.AuthOptions
and the fleet CA of STATE/pki (docs/fleet.md, An existing cluster).

--four-eyes makes a node's sandbox opt-out hold only once a second,
different admin approves it. --vetted-models names the models the tenant
vetted: a job naming another (airlock job start --model) runs on tier 1
only and is tainted, and so is every job it starts. --dev lets every node
take floor work, unconfined on a node without a sandbox, and says so in
every job: for a developer's own machine only.

--max-wall D and --max-memory SIZE (bytes, or with K, M or G) are ceilings
every job gets: the node narrows the job's policy to them, so a job's own
policy cannot raise them, and a run on its node ends by --max-wall.

Tenants: STATE/token is tenant "default"'s operator token; --tenants-file
(default STATE/tenants, 0600, one "TENANT TOKEN" a line) names more, each
an operator token of its own. A job is the tenant of the token that
started it, never of the request. --pool-quota POOL=N bounds the jobs that
hold a box at once in a pool, --tenant-quota TENANT=N those of a tenant
across pools (repeat each; * names every pool or tenant not named): a job
over a quota waits for a slot, up to its claim timeout, before any node
claims it. GET /v1/quotas shows them.

The API is served over TLS with a certificate of the fleet CA (for
loopback and the --listen address): nodes pin the CA by the SHA-256 the
enrolment token file carries ("TOKEN sha256:HEX"), the CLI trusts
--ca-file (default: STATE/pki/ca.pem). On a loopback --listen address it
takes plain HTTP as well; beyond loopback only TLS, unless --insecure-listen
is given: plain HTTP there too, the API's bearer tokens then crossing that
network unencrypted (a test's network namespaces, a private link). Temporal
then listens on that address too, for the nodes (mutual TLS only, as
always). The services keep their ports across restarts, so a
restarted server is found where it was and its running jobs resume.

The Temporal server is linked only into the airlock-server binary, which is
this command; the airlock binary stays small and only says where it is.`

// serverCmd runs Env.Server, which only the airlock-server binary sets;
// the airlock binary names that binary.
func serverCmd() *Command {
	return &Command{Name: "server", Usage: ServerUsage, Short: "run the fleet's server (embedded Temporal, HTTP API)", Long: ServerHelp,
		Run: func(ctx context.Context, env *Env, args []string) error {
			if env.Server != nil {
				return env.Server(ctx, env, args)
			}
			if slices.ContainsFunc(args, isHelp) {
				fs := NewFlags(env, "airlock server", ServerUsage, ServerHelp)
				return ParseFlags(fs, []string{"--help"})
			}
			return errs.Unavailablef("the Temporal server is linked only into airlock-server: run `airlock-server %s` instead", strings.Join(args, " "))
		}}
}

// isHelp says whether a is a request for help.
func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" }
