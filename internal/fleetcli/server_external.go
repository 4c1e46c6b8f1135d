package fleetcli

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// AirlockAuthorizer is the one value --temporal-authorizer takes: the
// operator's statement that the existing cluster runs jobs/server's claim
// mapper, authorizer and answer binding (jobs/server.AuthOptions).
const AirlockAuthorizer = "airlock"

// external is an existing Temporal cluster the server uses instead of the
// embedded one (--temporal and the flags beside it).
type external struct {
	hostPort, namespace string
	cert, key, ca       string
	authorizer          string
}

// set reports whether any of the flags was given.
func (e external) set() bool {
	return e.hostPort != "" || e.namespace != "" || e.cert != "" || e.key != "" || e.ca != "" || e.authorizer != ""
}

// check refuses an existing cluster airlock cannot rely on, failing
// closed: the cluster alone decides which process may poll floor.<pool>,
// and airlock cannot see from outside how it decides. So it wants mutual
// TLS (a cluster without it lets any process that reaches it poll floor
// queues) and the operator's explicit statement that the cluster runs
// airlock's authorizer.
func (e external) check() error {
	if !e.set() {
		return nil
	}
	if e.hostPort == "" {
		return cli.Usagef("--namespace and --temporal-tls-*/--temporal-authorizer name an existing cluster: give its address with --temporal HOST:PORT")
	}
	if _, _, err := net.SplitHostPort(e.hostPort); err != nil {
		return cli.Usagef("--temporal %q: want HOST:PORT", e.hostPort)
	}
	if e.cert == "" || e.key == "" || e.ca == "" {
		return cli.Usagef("--temporal %s: give --temporal-tls-cert, --temporal-tls-key and --temporal-tls-ca: a cluster without mutual TLS lets any process poll floor queues", e.hostPort)
	}
	if e.authorizer != AirlockAuthorizer {
		return cli.Usagef("--temporal %s: airlock cannot check from outside that the cluster authorizes nodes' polls by their attested tier: build its frontend with jobs/server.AuthOptions and say so with --temporal-authorizer airlock (see docs/fleet.md, An existing cluster)", e.hostPort)
	}
	if err := jobs.CheckName("namespace", e.ns()); err != nil {
		return cli.Usagef("--namespace: %v", err)
	}
	return nil
}

// ns is the namespace, the embedded server's by default.
func (e external) ns() string {
	if e.namespace == "" {
		return jobs.DefaultNamespace
	}
	return e.namespace
}

// clientTLS is the server's own connection to the cluster: its
// certificate and key, and the cluster's CA, no other root.
func (e external) clientTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(e.cert, e.key)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "--temporal-tls-cert %s, --temporal-tls-key %s", e.cert, e.key)
	}
	ca, err := os.ReadFile(e.ca)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "--temporal-tls-ca")
	}
	return pki.ClientTLS(ca, func() (*tls.Certificate, error) { return &cert, nil })
}

// connectTemporal starts the embedded Temporal server, or takes the
// existing cluster o.external names, and dials it with the server's own
// certificate. It returns the frontend's address and namespace (what nodes
// are told when they register), the client, and how to stop both.
func connectTemporal(ctx context.Context, env *cli.Env, o serverOptions, fleet *serverPKI,
	eligible func(node, queue string) bool, standing func(string) (int, bool, bool)) (string, string, *jobs.Client, func(), error) {
	if o.external.hostPort != "" {
		conf, err := o.external.clientTLS()
		if err != nil {
			return "", "", nil, nil, err
		}
		ns := o.external.ns()
		c, err := jobs.Dial(o.external.hostPort, ns, conf, env.Log)
		if err != nil {
			return "", "", nil, nil, errs.Wrap(errs.Unavailable, err, "--temporal %s", o.external.hostPort)
		}
		return o.external.hostPort, ns, c, c.Close, nil
	}
	dev, err := o.start(ctx, jobs.DevConfig{Dir: filepath.Join(o.dir, "temporal"), FrontendIP: o.temporalIP,
		Auth: &jobs.DevAuth{CA: fleet.ca.PEM, Services: fleet.services, Client: fleet.client, Eligible: eligible, Standing: standing}})
	if err != nil {
		return "", "", nil, nil, err
	}
	c, err := jobs.Dial(dev.HostPort(), dev.Namespace(), fleet.clientTLS, env.Log)
	if err != nil {
		dev.Stop()
		return "", "", nil, nil, err
	}
	return dev.HostPort(), dev.Namespace(), c, func() { c.Close(); dev.Stop() }, nil
}
