package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/rpc/encryption"
	"google.golang.org/grpc"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// The frontend's security, in three parts:
//
//	TLS        every connection to the frontend (and between the services
//	           behind it) presents a certificate of the fleet CA, or the
//	           handshake fails: no certificate, no call.
//	authorizer each call is allowed by the identity the verified
//	           certificate names (claimMapper): the server everything, a
//	           node only polling its own queues and answering its tasks.
//	tokens     a node answers only a task its own poll handed it (the
//	           task token is not signed by Temporal, so without this a node
//	           could forge one and complete another node's claim).

// workflowService is the prefix of every WorkflowService method's name.
const workflowService = "/temporal.api.workflowservice.v1.WorkflowService/"

// tlsProvider is the frontend's and the services' TLS: mutual, against the
// fleet CA only, TLS 1.3.
func tlsProvider(a *jobs.DevAuth) (*encryption.FixedTLSConfigProvider, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(a.CA) {
		return nil, errs.Invalidf("temporal dev server: the fleet CA certificate does not parse")
	}
	server := &tls.Config{Certificates: []tls.Certificate{a.Services}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: roots, MinVersion: tls.VersionTLS13}
	internodeClient := &tls.Config{Certificates: []tls.Certificate{a.Services}, RootCAs: roots, MinVersion: tls.VersionTLS13}
	frontendClient := &tls.Config{Certificates: []tls.Certificate{a.Client}, RootCAs: roots, MinVersion: tls.VersionTLS13}
	return &encryption.FixedTLSConfigProvider{
		InternodeServerConfig: server, InternodeClientConfig: internodeClient,
		FrontendServerConfig: server, FrontendClientConfig: frontendClient,
	}, nil
}

// claimMapper maps the verified peer certificate to its identity. The TLS
// handshake already verified the chain against the fleet CA (and only
// then does the certificate appear in VerifiedChains). A node's
// certificate must also be the one its id is bound to now (bound): the
// binding's removal revokes it, and an id enrolled again on another
// machine leaves the old machine's certificate nothing, though both are
// still within their life.
type claimMapper struct {
	bound func(*x509.Certificate) error
}

func (m claimMapper) GetClaims(ai *authorization.AuthInfo) (*authorization.Claims, error) {
	cert := authorization.PeerCert(ai.TLSConnection)
	id, err := pki.IdentityOf(cert)
	if err != nil {
		return nil, err
	}
	if id.Role == pki.RoleNode && m.bound != nil {
		if err := m.bound(cert); err != nil {
			return nil, err
		}
	}
	return &authorization.Claims{Subject: id.String(), Extensions: id, AuthType: "mtls"}, nil
}

// identityOf is the identity claimMapper put in claims.
func identityOf(c *authorization.Claims) (pki.Identity, bool) {
	if c == nil {
		return pki.Identity{}, false
	}
	id, ok := c.Extensions.(pki.Identity)
	return id, ok && id.Role != pki.RoleNone
}

// authorizer allows a call by the caller's identity. A node may:
//   - GetSystemInfo and DescribeNamespace (of the fleet's namespace): what
//     the SDK asks when it connects and when a worker starts;
//   - PollActivityTaskQueue on <pool> and node.<own id> always, and on
//     floor.<pool> or tier2.<pool> when Eligible says its attested tier
//     (or an opt-out, or --dev) lets it;
//   - answer and heartbeat the activity tasks it took (by task token; the
//     token interceptor checks they are its own).
//
// Everything else is denied: workflow polls, starting, signalling or
// terminating workflows, reading histories, another node's or pool's
// queues, other namespaces, the operator and admin services, and the
// ...ById answers (which name a task by workflow id, not by token).
type authorizer struct {
	namespace string
	eligible  func(node, queue string) bool
}

// nodeAPIs are the calls a node may make at all, each with whether it must
// name the fleet's namespace.
var nodeAPIs = map[string]bool{
	"GetSystemInfo":                false,
	"DescribeNamespace":            true,
	"PollActivityTaskQueue":        true,
	"RespondActivityTaskCompleted": true,
	"RespondActivityTaskFailed":    true,
	"RespondActivityTaskCanceled":  true,
	"RecordActivityTaskHeartbeat":  true,
	// The SDK's worker heartbeat and its goodbye at stop; each names
	// task queues, which must be the node's own.
	"RecordWorkerHeartbeat": true,
	"ShutdownWorker":        true,
}

func allow() authorization.Result { return authorization.Result{Decision: authorization.DecisionAllow} }

func deny(reason string) authorization.Result {
	return authorization.Result{Decision: authorization.DecisionDeny, Reason: reason}
}

func (a *authorizer) Authorize(_ context.Context, claims *authorization.Claims, t *authorization.CallTarget) (authorization.Result, error) {
	id, ok := identityOf(claims)
	if !ok {
		return deny("no certificate of this fleet's CA"), nil
	}
	if id.Role == pki.RoleServer || id.Role == pki.RoleTemporal {
		return allow(), nil
	}
	api, ok := strings.CutPrefix(t.APIName, workflowService)
	needsNS, known := nodeAPIs[api]
	if !ok || !known {
		return deny(id.String() + " may not call " + t.APIName + ": a node only takes and answers activity tasks"), nil
	}
	if needsNS && t.Namespace != a.namespace {
		return deny(id.String() + " may not use namespace " + t.Namespace + ": its fleet's namespace is " + a.namespace), nil
	}
	switch req := t.Request.(type) {
	case *workflowservice.DescribeNamespaceRequest:
		if req.GetId() != "" {
			return deny(id.String() + " may describe its namespace by name only"), nil
		}
	case *workflowservice.PollActivityTaskQueueRequest:
		return a.poll(id, req), nil
	case *workflowservice.RecordWorkerHeartbeatRequest:
		for _, hb := range req.GetWorkerHeartbeat() {
			if !a.mayPoll(id, hb.GetTaskQueue()) {
				return deny(id.String() + " may not report a worker on " + hb.GetTaskQueue()), nil
			}
		}
	case *workflowservice.ShutdownWorkerRequest:
		// An activity worker has no sticky queue; the queues it names
		// are the node's own, so it cannot end another worker's polls.
		for _, q := range []string{req.GetTaskQueue(), req.GetWorkerHeartbeat().GetTaskQueue()} {
			if req.GetStickyTaskQueue() != "" || q != "" && !a.mayPoll(id, q) {
				return deny(id.String() + " may shut down only its own workers"), nil
			}
		}
	}
	return allow(), nil
}

// poll allows a poll of one of the node's queues. Names are compared
// exactly, so a partition's internal name (/_sys/floor.ci/1) or another
// kind of queue is never one of them.
func (a *authorizer) poll(id pki.Identity, req *workflowservice.PollActivityTaskQueueRequest) authorization.Result {
	tq := req.GetTaskQueue()
	q := tq.GetName()
	if k := tq.GetKind(); k != enumspb.TASK_QUEUE_KIND_NORMAL && k != enumspb.TASK_QUEUE_KIND_UNSPECIFIED {
		return deny(id.String() + " may poll normal task queues only")
	}
	if a.mayPoll(id, q) {
		return allow()
	}
	switch q {
	case jobs.FloorQueue(id.Pool), jobs.Tier2Queue(id.Pool):
		need := "1"
		if q == jobs.Tier2Queue(id.Pool) {
			need = "2"
		}
		return deny(id.String() + " may not poll " + q + ": its attested sandbox tier is below " + need +
			" (fix: start the node on a host whose `airlock sandbox selftest` holds, or opt the node out)")
	}
	return deny(id.String() + " may not poll " + q + ": a node polls its pool's queues and its own only")
}

// mayPoll reports whether q is one of the node's queues: its pool's and
// its own always, its pool's floor and tier-2 queues when the registry
// says its attested tier (or an opt-out, or --dev) lets it.
func (a *authorizer) mayPoll(id pki.Identity, q string) bool {
	switch q {
	case jobs.PoolQueue(id.Pool), jobs.NodeQueue(id.Node):
		return true
	case jobs.FloorQueue(id.Pool), jobs.Tier2Queue(id.Pool):
		return a.eligible != nil && a.eligible(id.Node, q)
	}
	return false
}

// tokens binds each activity task token to the node whose poll received
// it, and lets a node answer or heartbeat only a token it holds.
type tokens struct {
	// eligible and standing are the registry's answers (see
	// jobs.DevAuth).
	eligible func(node, queue string) bool
	standing func(node string) (tier int, optedOut, known bool)
	mu       sync.Mutex
	held     map[string]held // by token
	// claims are the tiers claims were answered at, by claimKey: a
	// later task of the same workflow on the claiming node (its run) is
	// held to its claim's tier, also after a restart of the server.
	claims map[string]claimed
	now    func() time.Time
	// file keeps held across a restart of the server, so a run that
	// goes on meanwhile can still heartbeat and answer; "" keeps none.
	file string
}

type held struct {
	Node string `json:"node"`
	// Activity is the task's activity type, whose answer is checked.
	Activity string    `json:"activity"`
	At       time.Time `json:"at"`
	// Workflow is the task's workflow execution (id/run id).
	Workflow string `json:"workflow,omitempty"`
	// Claim is the tier the node's claim of Workflow was answered at,
	// when the server saw it; nil for a claim itself and for a task
	// whose claim it did not see.
	Claim *int `json:"claim,omitempty"`
}

// claimed is a claim's answered tier.
type claimed struct {
	Tier int       `json:"tier"`
	At   time.Time `json:"at"`
}

// claimKey names node's claim of the workflow execution wf.
func claimKey(wf, node string) string { return wf + "\x00" + node }

// keptFile is the bindings file: version 2 also keeps the claims. A file
// of version 1 is the bare map of tokens.
type keptFile struct {
	Version int                `json:"version"`
	Tokens  map[string]held    `json:"tokens"`
	Claims  map[string]claimed `json:"claims"`
}

// tokenTTL bounds how long a token is kept without an answer; longer than
// any run (runs heartbeat, and a heartbeat refreshes it).
const tokenTTL = 48 * time.Hour

func newTokens(eligible func(node, queue string) bool, standing func(string) (int, bool, bool)) *tokens {
	return &tokens{eligible: eligible, standing: standing, held: map[string]held{}, claims: map[string]claimed{}, now: time.Now}
}

// keptTokens is newTokens whose bindings are kept in file (in the
// server's own state directory, which no box reaches), read back at start.
func keptTokens(file string, eligible func(node, queue string) bool, standing func(string) (int, bool, bool)) (*tokens, error) {
	tk := newTokens(eligible, standing)
	tk.file = file
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return tk, nil
	}
	kept, err := readKept(b)
	if err != nil {
		return nil, errs.Invalidf("%s: the kept task bindings do not read (remove the file: running jobs then fail as lost)", file)
	}
	tk.claims = kept.Claims
	for k, h := range kept.Tokens {
		token, err := base64.StdEncoding.DecodeString(k)
		if err == nil {
			tk.held[string(token)] = h
		}
	}
	return tk, nil
}

// readKept reads a bindings file of either version.
func readKept(b []byte) (keptFile, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return keptFile{}, err
	}
	var kept keptFile
	if _, ok := probe["version"]; !ok {
		// Version 1: the tokens alone (a token's base64 is never
		// "version").
		kept.Version = 1
		if err := json.Unmarshal(b, &kept.Tokens); err != nil {
			return keptFile{}, err
		}
	} else if err := json.Unmarshal(b, &kept); err != nil || kept.Version != 2 {
		return keptFile{}, errors.Join(err, errors.New("unknown version"))
	}
	if kept.Claims == nil {
		kept.Claims = map[string]claimed{}
	}
	return kept, nil
}

// save writes the bindings to tk.file, whole, through a new file renamed
// into place; tk.mu is held. A failed save keeps the bindings in memory:
// only a restart then loses them.
func (tk *tokens) save() {
	if tk.file == "" {
		return
	}
	out := keptFile{Version: 2, Tokens: make(map[string]held, len(tk.held)), Claims: tk.claims}
	for k, h := range tk.held {
		out.Tokens[base64.StdEncoding.EncodeToString([]byte(k))] = h
	}
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	tmp := tk.file + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err == nil {
		os.Rename(tmp, tk.file)
	}
}

// answer is the token of a node's answer or heartbeat, and whether the
// call ends the task.
func answer(req any) (token []byte, final, ok bool) {
	switch r := req.(type) {
	case *workflowservice.RespondActivityTaskCompletedRequest:
		return r.GetTaskToken(), true, true
	case *workflowservice.RespondActivityTaskFailedRequest:
		return r.GetTaskToken(), true, true
	case *workflowservice.RespondActivityTaskCanceledRequest:
		return r.GetTaskToken(), true, true
	case *workflowservice.RecordActivityTaskHeartbeatRequest:
		return r.GetTaskToken(), false, true
	}
	return nil, false, false
}

// intercept runs after the authorizer, with the caller's claims in ctx.
func (tk *tokens) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c, _ := ctx.Value(authorization.MappedClaims).(*authorization.Claims)
	id, ok := identityOf(c)
	if !ok || id.Role != pki.RoleNode {
		return handler(ctx, req)
	}
	if token, final, ok := answer(req); ok {
		h, owns := tk.owns(id.Node, token)
		if !owns {
			return nil, serviceerror.NewPermissionDenied(authorization.RequestUnauthorized,
				id.String()+" may answer only an activity task its own poll took")
		}
		claimTier := -1
		if done, ok := req.(*workflowservice.RespondActivityTaskCompletedRequest); ok {
			why, tier := tk.checkHeld(id, h, done.GetResult())
			if why.text != "" {
				if why.retry {
					return nil, serviceerror.NewUnavailable(why.text)
				}
				return nil, serviceerror.NewPermissionDenied(authorization.RequestUnauthorized, why.text)
			}
			if h.Activity == jobs.ClaimActivity {
				claimTier = tier
			}
		}
		resp, err := handler(ctx, req)
		if final && err == nil {
			tk.release(token)
			if claimTier >= 0 && h.Workflow != "" {
				tk.claim(h.Workflow, id.Node, claimTier)
			}
		}
		return resp, err
	}
	resp, err := handler(ctx, req)
	if r, ok := resp.(*workflowservice.PollActivityTaskQueueResponse); ok && err == nil && len(r.GetTaskToken()) > 0 {
		wf := r.GetWorkflowExecution()
		tk.give(id.Node, r.GetActivityType().GetName(), r.GetTaskToken(), wf.GetWorkflowId()+"/"+wf.GetRunId())
	}
	return resp, err
}

// give binds token to node's poll of a task of activity for workflow wf;
// a task other than a claim carries the tier of the node's claim of wf,
// when the server saw one.
func (tk *tokens) give(node, activity string, token []byte, wf string) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	now := tk.now()
	for k, h := range tk.held {
		if now.Sub(h.At) > tokenTTL {
			delete(tk.held, k)
		}
	}
	for k, c := range tk.claims {
		if now.Sub(c.At) > tokenTTL {
			delete(tk.claims, k)
		}
	}
	h := held{Node: node, Activity: activity, At: now, Workflow: wf}
	if c, ok := tk.claims[claimKey(wf, node)]; ok && activity != jobs.ClaimActivity && wf != "" {
		tier := c.Tier
		h.Claim = &tier
		// An open job takes calls for as long as it is open: its claim
		// lives as long as its tasks come.
		c.At = now
		tk.claims[claimKey(wf, node)] = c
	}
	tk.held[string(token)] = h
	tk.save()
}

// claim records that node's claim of wf was answered at tier.
func (tk *tokens) claim(wf, node string, tier int) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.claims[claimKey(wf, node)] = claimed{Tier: tier, At: tk.now()}
	tk.save()
}

// owns reports whether node holds token, and keeps it fresh; h is the
// binding.
func (tk *tokens) owns(node string, token []byte) (h held, ok bool) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	h, ok = tk.held[string(token)]
	if !ok || h.Node != node {
		return held{}, false
	}
	h.At = tk.now()
	tk.held[string(token)] = h
	return h, true
}

// refusal is why an answer is refused; retry says the node may send it
// again later (it is not registered since the server started).
type refusal struct {
	text  string
	retry bool
}

func refuse(text string) refusal { return refusal{text: text} }

// checkAnswer is checkHeld for a task of activity with no claim seen.
func (tk *tokens) checkAnswer(id pki.Identity, activity string, result *commonpb.Payloads) string {
	why, _ := tk.checkHeld(id, held{Node: id.Node, Activity: activity}, result)
	return why.text
}

// runLike is an activity that runs a claimed job's work on the claiming
// node (a run, a call, a lease of one call): its answer reports the tier it ran at.
func runLike(activity string) bool {
	return activity == jobs.RunActivity || activity == jobs.CallActivity || activity == jobs.LeaseCallActivity
}

// checkHeld holds a node's claim, run or call result to what the server
// knows of it: the node it names is the caller, the tier it reports is
// one the caller's attestation lets it poll for, and a run's or call's is
// at most its claim's. So the workflow's floor checks and the tier it
// records read the attested tier, never only the node's word. Any other
// task of a claimed workflow that reports a tier is held to the claim
// too. A zero refusal allows the answer; tier is the one reported.
func (tk *tokens) checkHeld(id pki.Identity, h held, result *commonpb.Payloads) (why refusal, tier int) {
	activity := h.Activity
	if activity != jobs.ClaimActivity && !runLike(activity) {
		if t, ok := reportedTier(result); ok && h.Claim != nil && t > *h.Claim {
			return refuse(fmt.Sprintf("%s answered %s at sandbox tier %d, above the tier %d it claimed the job at", id, activity, t, *h.Claim)), t
		}
		return refusal{}, 0
	}
	ps := result.GetPayloads()
	if len(ps) != 1 || string(ps[0].GetMetadata()["encoding"]) != "json/plain" {
		return refuse(id.String() + " answered " + activity + " with a result that is not one JSON value"), 0
	}
	var r struct {
		Node     string `json:"node"`
		Tier     int    `json:"tier"`
		OptedOut bool   `json:"opted_out"`
	}
	// A key given twice would be read by the workflow as its last
	// spelling; refused rather than guessed at.
	if jobs.CheckJSON(ps[0].GetData()) != nil || json.Unmarshal(ps[0].GetData(), &r) != nil {
		return refuse(id.String() + " answered " + activity + " with a result that is not one JSON object"), 0
	}
	if r.Node != id.Node && (activity == jobs.ClaimActivity || r.Node != "") {
		return refuse(id.String() + " answered " + activity + " in the name of node " + r.Node), r.Tier
	}
	if h.Claim != nil && r.Tier > *h.Claim {
		return refuse(fmt.Sprintf("%s answered %s at sandbox tier %d, above the tier %d it claimed the job at", id, activity, r.Tier, *h.Claim)), r.Tier
	}
	if tk.standing != nil {
		return tk.checkStanding(id, activity, r.Tier, r.OptedOut, h.Claim != nil), r.Tier
	}
	for tier, q := range map[int]string{1: jobs.FloorQueue(id.Pool), 2: jobs.Tier2Queue(id.Pool)} {
		if r.Tier >= tier && (tk.eligible == nil || !tk.eligible(id.Node, q)) {
			return refuse(fmt.Sprintf("%s answered %s at sandbox tier %d, above its attested tier", id, activity, r.Tier)), r.Tier
		}
	}
	return refusal{}, r.Tier
}

// reportedTier is the "tier" of a result that is one JSON object with
// one; ok is false for any other result.
func reportedTier(result *commonpb.Payloads) (tier int, ok bool) {
	ps := result.GetPayloads()
	if len(ps) != 1 || jobs.CheckJSON(ps[0].GetData()) != nil {
		return 0, false
	}
	var r struct {
		Tier *int `json:"tier"`
	}
	if json.Unmarshal(ps[0].GetData(), &r) != nil || r.Tier == nil {
		return 0, false
	}
	return *r.Tier, true
}

// checkStanding holds an answer to the registry's standing of the node:
// the tier is at most the attested one (an opt-out or --dev lets a node
// poll the floor queue, never claim tier 1), and a claim says the opt-out
// exactly as it holds, since the workflow refuses tainted work and marks
// runs tier 0 by it. A zero refusal allows the answer.
func (tk *tokens) checkStanding(id pki.Identity, activity string, tier int, optedOut, claimSeen bool) refusal {
	attested, held, known := tk.standing(id.Node)
	switch {
	case !known && runLike(activity) && claimSeen:
		// Just after a server restart, before the node registers again:
		// its claim was held to its standing when it was made, and this
		// answer to the claim's tier (checkHeld).
		return refusal{}
	case !known && runLike(activity):
		// No claim to hold it to: refused until the node registered
		// again, as unavailable, so the node sends it again.
		return refusal{text: id.String() + " answered " + activity + " before registering again since the server started, for a claim the server did not see: it is taken once the node registered", retry: true}
	case !known:
		return refuse(id.String() + " answered " + activity + " but is not registered with the server")
	case tier > attested:
		return refuse(fmt.Sprintf("%s answered %s at sandbox tier %d, above its attested tier %d", id, activity, tier, attested))
	case activity == jobs.ClaimActivity && optedOut != held:
		return refuse(fmt.Sprintf("%s claimed with opted_out=%v, but the server holds %v (the node learns it at its next heartbeat; the claim is put again)", id, optedOut, held))
	}
	return refusal{}
}

// release forgets a token whose task was answered.
func (tk *tokens) release(token []byte) {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	delete(tk.held, string(token))
	tk.save()
}

var (
	_ authorization.ClaimMapper = claimMapper{}
	_ authorization.Authorizer  = (*authorizer)(nil)
)
