package runner

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

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
	if starttrace.On() {
		r.net = netRun{host: h, wall: time.Now(), mono: monotonic()}
	}
	return nil
}

// netRun is what the start trace needs of a box's served network: the
// host half, and one reading of both clocks to place the box's times.
type netRun struct {
	host *forward.Host
	wall time.Time
	mono int64
}

// traceNet adds the box's own phases to the start trace, once the box has
// ended: from bubblewrap's start to the exec step's (bubblewrap's setup and
// the Go start of the step), and the step's making and handing out of the
// listeners.
func (r *run) traceNet() {
	if r.net.host == nil {
		return
	}
	began, sent, ok := r.net.host.BoxTimes()
	if !ok {
		return
	}
	at := func(mono int64) time.Time { return r.net.wall.Add(time.Duration(mono - r.net.mono)) }
	starttrace.Span("box-exec-step", r.execAt, at(began).Sub(r.execAt))
	starttrace.Span("box-listen", at(began), time.Duration(sent-began))
}

// monotonic is CLOCK_MONOTONIC in nanoseconds, the clock the box's times
// are read from.
func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
