// Package server embeds a Temporal dev server in the process: every service
// (frontend, history, matching, worker) in one, persisted to one SQLite file,
// listening on loopback only. It is the only importer of go.temporal.io/server,
// and only cmd/airlock-server imports it, so the `airlock` binary never links
// the Temporal server.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// loopback is where the services behind the frontend listen, and the
// frontend unless told otherwise.
const loopback = "127.0.0.1"

// clusterName is the dev server's one cluster.
const clusterName = "active"

// Start starts a dev server persisted under cfg.Dir (the file
// temporal.sqlite, its schema created on first start) with the namespace
// cfg.Namespace registered. It returns once the frontend accepts
// connections; Stop ends every service.
func Start(ctx context.Context, cfg jobs.DevConfig) (jobs.DevServer, error) {
	if cfg.Dir == "" {
		return nil, errs.Invalidf("temporal dev server: no state directory")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = jobs.DefaultNamespace
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "temporal dev server state directory")
	}
	ports, err := keptPorts(filepath.Join(cfg.Dir, "ports.json"), 8)
	if err != nil {
		return nil, err
	}
	db := filepath.Join(cfg.Dir, "temporal.sqlite")
	sqlCfg := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: db,
		ConnectAttributes: map[string]string{"mode": "rwc", "_journal_mode": "wal", "_synchronous": "2"}}
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		if err := sqlite.SetupSchema(sqlCfg); err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "temporal dev server: create the schema in %s", db)
		}
	}
	ns, err := sqlite.NewNamespaceConfig(clusterName, cfg.Namespace, false, nil)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "temporal dev server: namespace %s", cfg.Namespace)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, ns); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "temporal dev server: namespace %s", cfg.Namespace)
	}

	frontIP, err := frontendIP(cfg)
	if err != nil {
		return nil, err
	}
	front := net.JoinHostPort(frontIP, fmt.Sprint(ports[0]))
	c := serverConfig(sqlCfg, frontIP, front, ports)
	opts := []temporal.ServerOption{
		temporal.WithConfig(c),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(log.NewNoopLogger()),
		temporal.WithCustomMetricsHandler(metrics.NoopMetricsHandler),
	}
	if cfg.Auth == nil {
		opts = append(opts, temporal.WithDynamicConfigClient(devConfig(nil)))
	} else {
		authOpts, err := authOptions(cfg.Auth, cfg.Namespace, filepath.Join(cfg.Dir, "task-bindings.json"))
		if err != nil {
			return nil, err
		}
		opts = append(opts, authOpts...)
	}
	srv, err := temporal.NewServer(opts...)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "temporal dev server")
	}
	if err := srv.Start(); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "temporal dev server: start")
	}
	if err := waitListening(ctx, front, 30*time.Second); err != nil {
		srv.Stop()
		return nil, err
	}
	return &dev{srv: srv, hostPort: front, namespace: cfg.Namespace}, nil
}

// devConfig is the embedded server's dynamic configuration, with extra.
// Its task queues have one partition each (a cluster's default is four):
// in one process with one history shard, more partitions only split a
// queue's pollers, so a task lands where no poll waits, is written to the
// database and forwarded, where with one it meets a waiting poll at once.
func devConfig(extra map[dynamicconfig.Key]any) dynamicconfig.StaticClient {
	c := dynamicconfig.StaticClient{
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// authOptions make every service require a certificate of the fleet CA
// (the frontend, the services behind it and their membership ring alike,
// so no local process reaches matching around the frontend) and authorize
// each frontend call by the identity its certificate names.
func authOptions(a *jobs.DevAuth, namespace, bindings string) ([]temporal.ServerOption, error) {
	tp, err := tlsProvider(a)
	if err != nil {
		return nil, err
	}
	opts := []temporal.ServerOption{
		temporal.WithTLSConfigFactory(tp),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper{bound: a.Bound} }),
		temporal.WithAuthorizer(&authorizer{namespace: namespace, eligible: a.Eligible}),
		temporal.WithDynamicConfigClient(devConfig(map[dynamicconfig.Key]any{dynamicconfig.EnableRingpopTLS.Key(): true})),
	}
	if !unboundAnswers {
		tk, err := keptTokens(bindings, a.Eligible, a.Standing)
		if err != nil {
			return nil, err
		}
		opts = append(opts, temporal.WithChainedFrontendGrpcInterceptors(tk.intercept))
	}
	return opts, nil
}

// AuthOptions are what a Temporal server must run for airlock-server
// --temporal to rely on it (--temporal-authorizer airlock): every service
// requiring a certificate of a.CA, the claim mapper reading the airlock
// identity from the verified certificate, the authorizer holding nodes to
// their own queues and to floor queues by a.Eligible, and the frontend
// interceptor binding each answer to the poll that took it (kept in the
// file bindings). A cluster operator builds their Temporal server with
// these options (temporal.NewServer(append(theirs, opts...)...)); they
// replace its TLS configuration, claim mapper, authorizer and dynamic
// config client. namespace is the fleet's, the one a node may name.
func AuthOptions(a jobs.DevAuth, namespace, bindings string) ([]temporal.ServerOption, error) {
	if len(a.CA) == 0 || len(a.Services.Certificate) == 0 || len(a.Client.Certificate) == 0 {
		return nil, errs.Invalidf("temporal authorizer: want the fleet CA, the services' and the system worker's certificates")
	}
	if namespace == "" || bindings == "" {
		return nil, errs.Invalidf("temporal authorizer: want the fleet's namespace and a file for the answers' bindings")
	}
	return authOptions(&a, namespace, bindings)
}

// unboundAnswers leaves out the binding of answers to polls: only a test
// sets it, to show what the binding stops.
var unboundAnswers bool

// frontendIP is where the frontend listens: loopback unless cfg names an
// IP, and then only behind mutual TLS, since nothing else keeps another
// machine's process from polling a floor queue.
func frontendIP(cfg jobs.DevConfig) (string, error) {
	if cfg.FrontendIP == "" {
		return loopback, nil
	}
	ip := net.ParseIP(cfg.FrontendIP)
	switch {
	case ip == nil:
		return "", errs.Invalidf("temporal dev server: frontend address %q: want an IP address", cfg.FrontendIP)
	case !ip.IsLoopback() && cfg.Auth == nil:
		return "", errs.Invalidf("temporal dev server: frontend address %s: off loopback only with mutual TLS", cfg.FrontendIP)
	case ip.IsUnspecified():
		return "", errs.Invalidf("temporal dev server: frontend address %s: name one address, not every one", cfg.FrontendIP)
	}
	return ip.String(), nil
}

// serverConfig is one process of every service, each on its own port
// (ports[0] the frontend, on frontIP; the others on loopback), with no
// archival, metrics or pprof. Each service tells the membership ring the
// address it listens on (no broadcast address), so the frontend may be on
// another one than the rest.
func serverConfig(sqlCfg *config.SQL, frontIP, front string, ports []int) *config.Config {
	svc := func(ip string, grpc, membership int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpc, MembershipPort: membership, BindOnIP: ip}}
	}
	return &config.Config{
		Global: config.Global{Membership: config.Membership{MaxJoinDuration: 30 * time.Second}},
		Persistence: config.Persistence{
			DefaultStore: sqliteplugin.PluginName, VisibilityStore: sqliteplugin.PluginName, NumHistoryShards: 1,
			DataStores: map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
		},
		ClusterMetadata: &cluster.Config{
			FailoverVersionIncrement: 10, MasterClusterName: clusterName, CurrentClusterName: clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: front},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": svc(frontIP, ports[0], ports[1]),
			"history":  svc(loopback, ports[2], ports[3]),
			"matching": svc(loopback, ports[4], ports[5]),
			"worker":   svc(loopback, ports[6], ports[7]),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
		PublicClient: config.PublicClient{HostPort: front},
	}
}

// dev is a running dev server.
type dev struct {
	srv       temporal.Server
	hostPort  string
	namespace string
}

func (d *dev) HostPort() string  { return d.hostPort }
func (d *dev) Namespace() string { return d.namespace }
func (d *dev) Stop() error       { return d.srv.Stop() }

// freePorts reserves n loopback ports by listening on them at once, so no
// two are the same, then frees them for the services to bind.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "temporal dev server: a loopback port")
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// keptPorts are the services' ports of the last start, kept in file, when
// all are free again; else fresh ones, kept for the next start. A restart
// on the ports it had takes the place of the services it replaces in the
// cluster membership the SQLite file keeps, instead of joining beside the
// dead ones and waiting until they are found gone.
func keptPorts(file string, n int) ([]int, error) {
	var kept []int
	if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &kept) == nil && len(kept) == n && portsFree(kept) {
		return kept, nil
	}
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(ports)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "temporal dev server: keep its ports")
	}
	return ports, nil
}

// portsFree reports whether every port can be bound on loopback now.
func portsFree(ports []int) bool {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			return false
		}
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, fmt.Sprint(p)))
		if err != nil {
			return false
		}
		ls = append(ls, l)
	}
	return true
}

// waitListening waits until addr accepts a connection.
func waitListening(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errs.Wrap(errs.Unavailable, err, "temporal dev server: frontend %s did not come up", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var _ jobs.StartDevServer = Start
