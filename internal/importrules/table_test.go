package importrules

// This file is the law: DESIGN.md's layers ("Parts and their boundaries") as
// a table of every airlock package and the airlock packages it may import
// directly. A package that is not in the table fails TestImportRules, so a
// new package is placed here, in its layer, before it can be merged. The
// rules in rules_test.go are checked against the table (TestTableObeysDesign)
// and the code against the table (TestImportRules), so the table cannot be
// edited into breaking DESIGN.md without a rule failing.

// layer is a row of DESIGN.md's diagram, bottom first. A package imports
// only from its own layer or below.
type layer int

const (
	leaves    layer = iota // netrule · errs · fit · boxconf, the wire formats
	parts                  // egress · policy · audit · files, MCP decoding, the kernel features sandbox builds on
	host                   // runner · sandbox · approvals · offload, and the in-box init beside them
	kernel                 // mediator, and the escape matrix that drives runner directly
	jobs                   // job trees, routing, Temporal
	frontEnds              // mcp/serve, mcp/gateway, node, server API: a message in, a Call to the mediator, its Outcome out
	cli                    // internal/cli and the wiring it builds the kernel with
	mains                  // cmd/...: pick the mode, hand over
	tests                  // packages of tests only: nobody imports them, they import no airlock package
)

var layerNames = map[layer]string{
	leaves: "leaves", parts: "parts", host: "host", kernel: "kernel", jobs: "jobs",
	frontEnds: "front ends", cli: "cli", mains: "mains", tests: "tests",
}

func (l layer) String() string { return layerNames[l] }

// row is one package's place.
type row struct {
	layer layer
	// may lists the airlock packages it may import directly, besides errs,
	// which every package but the tests may import.
	may []string
	// pure packages decide and compute; they do no I/O and depend only on
	// pure packages.
	pure bool
	// starts says why the package may start processes; "" means it may not
	// import os/exec or call os.StartProcess, syscall.ForkExec, syscall.Exec,
	// unix.Exec or the exec/fork system calls.
	starts string
}

// universal may be imported by every package outside the tests layer.
const universal = "errs"

var table = map[string]row{
	// leaves
	"errs":             {layer: leaves, pure: true},
	"netrule":          {layer: leaves, pure: true},
	"fit":              {layer: leaves, pure: true},
	"termsafe":         {layer: leaves, pure: true},
	"policy/shellread": {layer: leaves, pure: true},
	// the one list of files the person's tools run or load, for the mounts and the reader
	"policy/protected": {layer: leaves, pure: true},
	"sandbox/boxconf":  {layer: leaves, pure: true},
	"egress/wire":      {layer: leaves},
	// the fleet's plain wire types and the API's bodies, with no Temporal
	// package, so the airlock binary's HTTP clients link them without the SDK
	"jobs/wire": {layer: leaves, pure: true},
	"api/wire":  {layer: leaves, pure: true, may: []string{"jobs/wire"}},
	// starttrace: the phases of one start, timed when AIRLOCK_TRACE_START is set.
	"internal/starttrace": {layer: leaves},
	// warmhand: the client half of the hand-over to `airlock warm`, run
	// while the airlock binary starts (see startLight).
	"internal/warmhand":         {layer: leaves, may: []string{"internal/starttrace"}},
	"internal/warmhand/atstart": {layer: leaves, may: []string{"internal/warmhand"}},

	// parts
	"policy":         {layer: parts, pure: true, may: []string{"netrule", "policy/protected", "policy/shellread"}},
	"egress":         {layer: parts, may: []string{"egress/wire", "netrule"}},
	"egress/forward": {layer: parts, may: []string{"egress/wire"}},
	"audit":          {layer: parts, may: []string{"internal/privfile", "internal/starttrace"}},
	// audit's spans through a tracer a program brings: the OpenTelemetry
	// API, which the airlock binary never links (see depRules)
	"audit/otelaudit":  {layer: parts, may: []string{"audit"}},
	"files":            {layer: parts, may: []string{"internal/privfile"}},
	"files/sqldriver":  {layer: parts}, // the store's SQLite driver, linked only by the programs that open a store
	"mcp":              {layer: parts, may: []string{"fit"}},
	"sandbox/cgroup":   {layer: parts},
	"sandbox/seccomp":  {layer: parts},
	"sandbox/landlock": {layer: parts},
	// lookpath: how a name becomes the file it runs, for the planner and the in-box init alike.
	"sandbox/lookpath": {layer: parts},
	// privfile writes airlock's own files (audit log, grants, store) so that no box can steer them.
	"internal/privfile": {layer: parts},
	// pki: the fleet's CA, node certificates and signed attestations; below jobs so that the server, api and node share it.
	"jobs/pki": {layer: parts, may: []string{"internal/privfile"}},

	// host
	"sandbox":   {layer: host, may: []string{"internal/privfile", "internal/starttrace", "policy/protected", "sandbox/boxconf", "sandbox/cgroup", "sandbox/landlock", "sandbox/lookpath", "sandbox/seccomp"}},
	"runner":    {layer: host, may: []string{"egress/forward", "internal/starttrace", "sandbox", "sandbox/boxconf", "sandbox/cgroup"}, starts: "the only code that executes processes on the host (DESIGN.md)"},
	"approvals": {layer: host, may: []string{"audit", "internal/privfile", "policy"}},
	// the hand-over of a run to `airlock warm`: socket, peer checks, wire
	// (its directory checked as the approvals socket's)
	"internal/warmrun": {layer: host, may: []string{"approvals", "internal/starttrace", "internal/warmhand"}},
	"offload":          {layer: host, may: []string{"files", "fit"}},
	"sandbox/boxinit": {layer: host, may: []string{"sandbox/boxconf", "sandbox/landlock", "sandbox/lookpath", "sandbox/seccomp", "egress/forward"},
		starts: "the in-box init starts the target inside the box"},

	// kernel
	"mediator": {layer: kernel, may: []string{"approvals", "audit", "egress", "egress/wire", "files", "fit",
		"netrule", "offload", "policy", "policy/shellread", "runner", "sandbox"}},
	"escape": {layer: kernel, may: []string{"egress", "egress/forward", "egress/wire", "netrule", "runner",
		"sandbox", "sandbox/seccomp"},
		starts: "the escape matrix runs each attack unconfined first, to show it works outside any box"},

	// jobs
	"jobs":        {layer: jobs, may: []string{"jobs/wire"}},
	"jobs/server": {layer: jobs, may: []string{"jobs", "jobs/pki"}}, // the embedded Temporal server, linked only into airlock-server

	// front ends
	// policy and audit: the types of the rules a front end forwards and of
	// the records its hooks write (a message refused before it is a call).
	"mcp/serve":     {layer: frontEnds, may: []string{"audit", "mcp", "mcp/approval", "mcp/httpfront", "mediator", "policy"}},
	"mcp/gateway":   {layer: frontEnds, may: []string{"audit", "mcp", "mcp/approval", "mcp/httpfront", "mediator", "policy"}},
	"mcp/approval":  {layer: frontEnds, may: []string{"mcp", "mediator"}}, // the one question put to the person at an MCP client
	"mcp/httpfront": {layer: frontEnds, may: []string{"mcp"}},             // the guard before any MCP code sees an HTTP request
	// node runs a job's calls through a kernel the CLI builds for it; the
	// CLI, not node, probes the tier (a front end builds no box).
	"node": {layer: frontEnds, may: []string{"jobs", "jobs/pki", "mcp", "mcp/gateway", "mediator", "policy"}},
	"api":  {layer: frontEnds, may: []string{"api/wire", "audit", "jobs", "jobs/pki"}}, // the server's HTTP API: routes jobs, runs none, keeps the server's audit log

	// cli
	"internal/wiring": {layer: cli, may: []string{"approvals", "audit", "egress", "egress/wire", "files", "fit",
		"internal/privfile", "internal/starttrace", "mcp", "mediator", "netrule", "offload", "policy", "sandbox"}},
	"internal/cli": {layer: cli, may: []string{"api/wire", "approvals", "audit", "escape", "files", "fit", "internal/privfile", "jobs/pki", "jobs/wire", "termsafe",
		"internal/warmrun", "internal/wiring", "mediator", "offload", "policy", "policy/shellread", "sandbox", "sandbox/lookpath"},
		starts: "`airlock node` and `airlock mcp` hand their arguments to the airlock-node and airlock-mcp binaries (syscall.Exec), which alone link the Temporal SDK and the MCP SDK"},
	// fleetcli: `airlock node` and `airlock server`, which link Temporal;
	// only the airlock-node and airlock-server binaries import it.
	"internal/fleetcli": {layer: cli, may: []string{"api", "audit", "escape", "files", "files/sqldriver", "internal/cli", "internal/privfile", "internal/wiring",
		"jobs", "jobs/pki", "node", "offload", "policy", "sandbox"}},
	// mcpcli: `airlock mcp serve` and `airlock mcp wrap`, which link the
	// MCP SDK; only the airlock-mcp binary imports it.
	"internal/mcpcli": {layer: cli, may: []string{"files/sqldriver", "internal/cli", "internal/wiring", "mcp/gateway", "mcp/httpfront", "mcp/serve",
		"mediator", "offload", "policy"}},

	// mains
	"cmd/airlock":        {layer: mains, may: []string{"egress/forward", "escape", "internal/cli", "internal/starttrace", "internal/warmhand/atstart", "sandbox", "sandbox/boxinit"}},
	"cmd/airlock-node":   {layer: mains, may: []string{"egress/forward", "escape", "internal/cli", "internal/fleetcli", "sandbox", "sandbox/boxinit"}},
	"cmd/airlock-mcp":    {layer: mains, may: []string{"egress/forward", "escape", "internal/cli", "internal/mcpcli", "sandbox", "sandbox/boxinit"}},
	"cmd/airlock-box":    {layer: mains, may: []string{"egress/forward", "sandbox/boxinit"}}, // the in-box binary: see boxBanned
	"cmd/airlock-server": {layer: mains, may: []string{"internal/cli", "internal/fleetcli", "jobs/server"}},

	// tests
	"internal/e2e":         {layer: tests},
	"internal/importrules": {layer: tests},
	"internal/testsupport": {layer: tests, starts: "builds the airlock binary for tests (go build); only _test.go files import it"},
}

// pending is an import the table forbids that the tree still has, while the
// work it belongs to moves. TestImportRules logs each and fails once one is
// gone, so the lists only shrink.
type pending struct {
	pkg, imp, why string
}

// pendingFrontEnd: front-end imports of the loop's work that still wait to
// move into mediator ({package, import, "moves into mediator"}). It is
// empty: mcp/serve and mcp/gateway translate and nothing else. Entries leave
// it, none join it.
var pendingFrontEnd = []pending{}

// pendingBoxInit: empty — the in-box init takes LookPath and EnvValue from
// sandbox/lookpath, and cmd/airlock dispatches the host-side guard.
var pendingBoxInit = []pending{}
