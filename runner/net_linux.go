package runner

import (
	"context"

	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/sandbox"
)

// pendingPing is the egress proxy's answer to the ping made beside the
// plan (startPing); nil when the run has no network.
type pendingPing chan pingMade

type pingMade struct {
	models bool
	err    error
}

// startPing checks, beside the plan, that the proxy of req's network
// answers to its token, and asks whether it serves models: a box without
// an init learns it from airlock (serveNet), not from a ping of its own.
func startPing(req Request) pendingPing {
	n := req.Spec.Net
	if n == nil || req.Tier != sandbox.Tier1 {
		return nil
	}
	ch := make(pendingPing, 1)
	go func() {
		defer starttrace.Begin("egress-ping")()
		models, err := forward.Ping(context.Background(), n.ProxySocket, n.Token)
		ch <- pingMade{models, err}
	}()
	return ch
}

// serveNet starts, before bubblewrap, airlock's half of the forwarder of a
// box with network and no init (sandbox.Box.NetHost): it serves the
// listeners the box's exec step hands out, until the run's end closes them.
// Other boxes have nothing to serve.
func (r *run) serveNet() error {
	sock := r.box.NetHost()
	if sock == nil {
		return nil
	}
	n := r.req.Spec.Net
	if r.ping == nil || n == nil {
		return errs.Unavailablef("run: the box's network was planned without a proxy to reach")
	}
	end := starttrace.Begin("egress-serve")
	defer end()
	m := <-r.ping
	if m.err != nil {
		return errs.Wrap(errs.Unavailable, m.err, "run")
	}
	h, err := forward.ServeHost(sock, forward.Config{Socket: n.ProxySocket, Token: n.Token, Serve: n.Serve}, m.models)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "run")
	}
	r.closers = append(r.closers, h.Close)
	return nil
}
