package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/starttrace"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// Warm boxes. A Pool keeps, for one session, boxes that are already made
// (namespaces, mounts, walls, filter: sandbox.PlanWarm) and runs each call
// in one whose fingerprint is the call's own box: every call is planned
// afresh as a cold one is, so a host change since the box was made (a new
// socket in a grant, a new repository, a swapped link, another policy or
// mode or directory) gives another fingerprint and another box. The box's
// init runs the call in a session of its own, ends every process in the
// box when it is over and reports how the call ended (the call's result is
// returned then), then brings the scratch directories back and reports
// the box clear; only then is the box idle again. A box that could not be
// cleared, or does not say so in time, is retired.
//
//	Pool.Run ──plan──▶ fingerprint ──▶ idle box of that fingerprint?
//	                                    ├─ yes: run the call in it, then close the plan
//	                                    ├─ one being cleared: wait for it
//	                                    └─ no:  start a box from this plan
//
// A call the warm path cannot take (tier 0, a network whose proxy is not
// in this process or is not tier 1's, a box that needs placeholders on the
// host for missing protected paths) runs cold, as Run would run it. A warm
// box with network serves each call's connections through that call's
// proxy (warm_net_linux.go).

// DefaultIdle is how long a warm box waits for its next call before it is
// ended.
const DefaultIdle = 5 * time.Minute

// maxIdleBoxes bounds the idle boxes kept per fingerprint (more exist only
// while calls run side by side).
const maxIdleBoxes = 2

// maxIdleTotal bounds the idle boxes of a pool, whatever their kinds:
// calls whose confinement differs each time (another working directory, a
// bind of the call's own such as its egress proxy's CA bundle) would
// otherwise leave a box each, idle for the pool's idle time, and a call
// could make as many as it likes. Past it the box idle longest is ended.
const maxIdleTotal = 8

// readyTimeout bounds the wait for a new box's init to report.
const readyTimeout = 30 * time.Second

// wallGrace is how long past a call's wall-clock limit the runner waits
// for the init's report before it ends the box itself.
const wallGrace = 5 * time.Second

// Pool is the warm boxes of one session. It is safe for concurrent use;
// calls running side by side get a box each.
type Pool struct {
	exe  string
	idle time.Duration

	// trace, when set (by a benchmark), is told where each warm call's
	// time went.
	trace func(warmPhases)

	mu   sync.Mutex
	free map[string][]*warmBox // idle boxes by fingerprint
	// clearing are the boxes whose last call has ended and whose init
	// has not yet reported them clear, by fingerprint.
	clearing map[string][]*warmBox
	all      map[*warmBox]bool
	closed   bool
}

// NewPool returns a pool whose boxes run exe as their init and end after
// idle without a call (0 is DefaultIdle).
func NewPool(exe string, idle time.Duration) *Pool {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Pool{exe: exe, idle: idle, free: map[string][]*warmBox{}, clearing: map[string][]*warmBox{}, all: map[*warmBox]bool{}}
}

// Warm reports whether req would run in a warm box (tier 1 or 2; with
// network, tier 1 with the egress proxy in this process).
func Warm(req Request) bool {
	return (req.Tier == sandbox.Tier1 || req.Tier == sandbox.Tier2) && (req.Spec.Net == nil || warmNetAllowed(req))
}

// Run runs req as Run does, in a warm box when it can (see Warm), and
// reports how it ended.
func (p *Pool) Run(ctx context.Context, req Request) (Result, error) {
	if req.Tier == sandbox.TierAuto {
		return Result{}, sandbox.ErrAuto("runner")
	}
	if !Warm(req) {
		return Run(ctx, p.exe, req)
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return Result{}, errs.Invalidf("run: no command")
	}
	start := time.Now()
	var ph warmPhases
	// Beside the plan, as a cold run asks it: the call's proxy answers
	// to its token, and says whether it serves models.
	ping := startPing(req)
	// A key plan: at tier 2 it makes no box directory (PlanWarmKey).
	endPlan := starttrace.Begin("warm-plan")
	plan, err := sandbox.PlanWarmKey(req.Spec, req.Tier, p.exe)
	endPlan()
	if err != nil {
		return Result{}, err
	}
	if len(plan.Stubs) > 0 {
		// Placeholders for missing protected paths are on the host while
		// their box lives; a cold box removes them as soon as the call
		// ends, so the host's tree is as it was between calls.
		plan.Close()
		return Run(ctx, p.exe, req)
	}
	// The box's cgroup holds its limits: another memory, CPU or process
	// limit is another box. The wall-clock limit is each call's own.
	lim := req.Spec.Limits
	lim.Wall = 0
	fp := plan.Fingerprint() + fmt.Sprintf("/%+v", lim)
	ph.Plan = time.Since(start)
	endTake := starttrace.Begin("warm-take")
	wb := p.take(ctx, fp)
	endTake()
	ph.Take = time.Since(start) - ph.Plan
	if wb == nil && !plan.Startable() {
		// No box of this fingerprint: the box itself is planned now,
		// and known by its own plan's fingerprint.
		plan.Close()
		if plan, err = sandbox.PlanWarm(req.Spec, req.Tier, p.exe); err != nil {
			return Result{}, err
		}
		fp = plan.Fingerprint() + fmt.Sprintf("/%+v", lim)
	}
	// Before a box of the call's is started or sent the call; the box
	// started below is the call's from then on, so it needs no second
	// wait.
	if err := req.beforeStart(); err != nil {
		if plan != nil {
			plan.Close()
		}
		if wb != nil {
			p.put(wb)
		}
		return Result{}, err
	}
	req.BeforeStart = nil
	if wb == nil {
		if wb, err = p.startBox(req, plan, fp); err != nil {
			return Result{}, err
		}
		plan = nil // the box's own now
	}
	warm := wb.calls > 0
	endCall := starttrace.Begin("warm-box-call")
	res, reuse, err := wb.call(ctx, req, ping, start, &ph)
	endCall()
	if req.Ended != nil {
		// The run's record is written, and its fsync started, before
		// the plan is closed and the box handed back to be cleared.
		req.Ended(res, err)
	}
	if plan != nil {
		// This call's own plan: what it holds for the host (placeholders,
		// the repositories it saw) is released and checked now, as after
		// a cold run.
		plan.Close()
	}
	switch {
	case reuse && err == nil:
		// The init clears the box now; it is idle again once it says
		// it is clear.
		p.settle(wb)
	case err != nil:
		// The call may still run (cancelled, or its box broke): nothing
		// of it is waited for.
		p.retireNow(wb)
	default:
		wb.net.close()
		p.retire(wb)
	}
	if p.trace != nil && warm {
		ph.Total = time.Since(start)
		p.trace(ph)
	}
	return res, err
}

// warmPhases are where one call in a warm box spent its time, each from
// the end of the one before: its plan and fingerprint, finding an idle
// box, handing the call over, the box's work until every process in it
// had ended (of which the init's own report says how much was starting
// the command and running it), reading the rest of its output, and what
// is left (closing the plan, the result). Total is the whole call.
type warmPhases struct {
	Plan, Take, Send, Box, Start, Run, Drain, Total time.Duration
}

// Close ends every box of the pool, idle or running a call, and waits until
// nothing of them is left. Run after Close runs cold.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	boxes := make([]*warmBox, 0, len(p.all))
	for wb := range p.all {
		boxes = append(boxes, wb)
	}
	p.all, p.free, p.clearing = map[*warmBox]bool{}, map[string][]*warmBox{}, map[string][]*warmBox{}
	p.mu.Unlock()
	for _, wb := range boxes {
		wb.end()
	}
}

// Boxes is how many boxes the pool holds (idle or busy).
func (p *Pool) Boxes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all)
}

// clearWait bounds how long a call waits for a box of its kind that is
// being cleared: a few times what starting a new box costs. The last call
// decides how long its box takes to clear (a scratch directory it filled
// with files takes seconds, up to clearTimeout), so an unbounded wait
// would let one call delay the next by as much as it likes.
const clearWait = time.Second

// take returns an idle box of fingerprint fp, or nil. When none is idle
// but one is being cleared, it waits for that one (clearing usually takes
// far less than making a box) until ctx ends or clearWait has passed.
func (p *Pool) take(ctx context.Context, fp string) *warmBox {
	var late <-chan time.Time
	for {
		wb, wait := p.takeIdle(fp)
		if wb != nil || wait == nil {
			return wb
		}
		if late == nil {
			t := time.NewTimer(clearWait)
			defer t.Stop()
			late = t.C
		}
		select {
		case <-wait:
		case <-late:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// takeIdle returns an idle box of fingerprint fp; else, when a box of fp
// is being cleared, a channel closed once it is settled.
func (p *Pool) takeIdle(fp string) (*warmBox, <-chan struct{}) {
	var dead []*warmBox
	defer func() {
		for _, wb := range dead {
			p.retire(wb)
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	for list := p.free[fp]; len(list) > 0; list = p.free[fp] {
		wb := list[len(list)-1]
		p.free[fp] = list[:len(list)-1]
		if !wb.idleTimer.Stop() {
			continue // its idle time ran out: the timer retires it
		}
		if wb.alive() && wb.intact() && wb.net.listening() {
			return wb, nil
		}
		dead = append(dead, wb)
	}
	if list := p.clearing[fp]; len(list) > 0 {
		return nil, list[0].settled
	}
	return nil, nil
}

// settle waits, off the caller's path, for the init's report that wb is
// clear, and then makes it idle again; dirty, out of order or late, the
// box is retired. Until then wb is in no idle list, so no call starts in
// a box still being cleared.
func (p *Pool) settle(wb *warmBox) {
	wb.settled = make(chan struct{})
	p.mu.Lock()
	p.clearing[wb.fp] = append(p.clearing[wb.fp], wb)
	p.mu.Unlock()
	go func() {
		var clear boxconf.BoxClear
		err := wb.releaseNet()
		if err == nil {
			clear, err = wb.awaitClear()
		}
		if wb.pidsReset != nil {
			err = errors.Join(err, <-wb.pidsReset)
			wb.pidsReset = nil
		} else if wb.private && err == nil {
			err = errs.Unavailablef("run: the warm box's process ids were not set back")
		}
		idle := err == nil && clear.Dirty == ""
		p.mu.Lock()
		p.clearing[wb.fp] = without(p.clearing[wb.fp], wb)
		if len(p.clearing[wb.fp]) == 0 {
			delete(p.clearing, wb.fp)
		}
		// Idle again in the same hold of the lock that ends its clearing,
		// so a call waiting for it (take) finds it.
		idle = idle && p.makeIdle(wb)
		if !idle {
			delete(p.all, wb) // forgotten before it is settled; ended below
		}
		over := p.trimIdle()
		p.mu.Unlock()
		close(wb.settled)
		for _, o := range over {
			o.end()
		}
		switch {
		case idle:
		case err != nil:
			p.retireNow(wb)
		default:
			p.retire(wb)
		}
	}()
}

// settledAll waits until no box of the pool is being cleared.
func (p *Pool) settledAll() {
	for {
		var wait <-chan struct{}
		p.mu.Lock()
		for _, list := range p.clearing {
			wait = list[0].settled
			break
		}
		p.mu.Unlock()
		if wait == nil {
			return
		}
		<-wait
	}
}

// releaseNet ends the last call's network, if the box has one, and tells
// the init, which checks the namespace only then.
func (wb *warmBox) releaseNet() error {
	if wb.net == nil {
		return nil
	}
	// After the call's answer, before the box is idle again: a call
	// right behind waits for it in warm-take.
	defer starttrace.Begin("warm-net-release")()
	if err := wb.net.release(); err != nil {
		return err
	}
	_, err := wb.ctlFile.Write([]byte{boxconf.NetReleased})
	return err
}

// without returns list less wb.
func without(list []*warmBox, wb *warmBox) []*warmBox {
	for i, o := range list {
		if o == wb {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

// put makes wb idle again, or ends it when the pool is closed or holds
// enough idle boxes of its kind.
func (p *Pool) put(wb *warmBox) {
	p.mu.Lock()
	idle := p.makeIdle(wb)
	over := p.trimIdle()
	p.mu.Unlock()
	if !idle {
		p.retire(wb)
	}
	for _, o := range over {
		o.end()
	}
}

// makeIdle puts wb among the idle boxes unless the pool is closed, holds
// enough idle boxes of its kind or has forgotten wb; p.mu is held.
func (p *Pool) makeIdle(wb *warmBox) bool {
	if p.closed || len(p.free[wb.fp]) >= maxIdleBoxes || !p.all[wb] {
		return false
	}
	p.free[wb.fp] = append(p.free[wb.fp], wb)
	wb.idleTimer.Reset(p.idle)
	wb.idleSince = time.Now()
	return true
}

// trimIdle forgets the boxes idle longest while more than maxIdleTotal are
// idle, and returns them for the caller to end once p.mu is released;
// p.mu is held.
func (p *Pool) trimIdle() []*warmBox {
	n := 0
	for _, list := range p.free {
		n += len(list)
	}
	var over []*warmBox
	for ; n > maxIdleTotal; n-- {
		var oldest *warmBox
		for _, list := range p.free {
			for _, wb := range list {
				if oldest == nil || wb.idleSince.Before(oldest.idleSince) {
					oldest = wb
				}
			}
		}
		p.free[oldest.fp] = without(p.free[oldest.fp], oldest)
		if len(p.free[oldest.fp]) == 0 {
			delete(p.free, oldest.fp)
		}
		delete(p.all, oldest)
		over = append(over, oldest)
	}
	return over
}

// retireNow kills wb at once and forgets it.
func (p *Pool) retireNow(wb *warmBox) {
	wb.endOnce.Do(func() {
		wb.idleTimer.Stop()
		wb.net.close() // the call's connections and proxy are let go at once
		wb.ctlFile.Close()
		wb.kill()
	})
	p.retire(wb)
}

// retire ends wb and forgets it.
func (p *Pool) retire(wb *warmBox) {
	p.mu.Lock()
	delete(p.all, wb)
	p.free[wb.fp] = without(p.free[wb.fp], wb)
	p.mu.Unlock()
	wb.end()
}

// startBox starts a warm box from plan, whose box it then owns.
func (p *Pool) startBox(req Request, plan *sandbox.Box, fp string) (*warmBox, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		plan.Close()
		return nil, errs.Unavailablef("run: the session's boxes are closed")
	}
	boxReq := Request{Argv: []string{"(warm box)"}, Spec: req.Spec, Tier: req.Tier}
	boxReq.Spec.Limits.Wall = 0 // each call's own, enforced by the init
	if req.Spec.Net != nil {
		// The box has network, but no call's proxy: its socket, token
		// and accept loop are each call's own (warmBox.call), and the
		// box, which outlives this call, keeps none of them.
		boxReq.Spec.Net = &sandbox.NetSpec{}
	}
	tr := warmRunner(plan) // tier 1's or tier 2's start (warm_gvisor_linux.go)
	r := newRun(p.exe, boxReq, plan, tr, startGroup(boxReq))
	r.desc.Notes = append(r.desc.Notes, "warm box: the box was made once for calls of this confinement; each call ran in a session of its own, every process in the box was ended after it and /tmp, /var/tmp, /run, /dev, HOME and the POSIX message queues were brought back to their first state (those of them the box's own: a host directory bound at one is the host's, as in a box of its own)")
	cmd, err := r.launch()
	if err != nil {
		r.finish()
		return nil, err
	}
	wn, err := takeWarmNet(plan, r.nsInit)
	if err != nil {
		r.killed.Store(true)
		r.killAll(cmd)
		r.wait(context.Background(), cmd)
		r.finish()
		return nil, err
	}
	wb := &warmBox{net: wn, r: r, cmd: cmd, fp: fp, ctlFile: plan.Control(), ctl: bufio.NewReaderSize(plan.Control(), 64<<10),
		dir: plan.Dir(), dead: make(chan struct{}), seccomp: tr.readyReport(), desc: r.desc}
	wb.desc.Notes = append([]string(nil), r.desc.Notes...)
	if plan.Tier == sandbox.Tier1 {
		// Before its first call (warm_private_linux.go).
		note := privateNote
		if hidePids(r.nsInit) == nil {
			wb.pids, _ = startPidResetter(r.nsInit, plan.InitBin())
		}
		if wb.private = wb.pids != nil; !wb.private {
			note = privacyNote
		}
		wb.desc.Notes = append(wb.desc.Notes, note)
	}
	// Unreadable, the box serves this call and no other (intact).
	wb.mounts, _ = watchMounts(r.nsInit)
	wb.idleTimer = time.AfterFunc(time.Hour, func() { p.retire(wb) })
	wb.idleTimer.Stop()
	p.mu.Lock()
	p.all[wb] = true
	p.mu.Unlock()
	go func() {
		r.wait(context.Background(), cmd)
		if wb.pids != nil {
			wb.pids.close()
		}
		wb.net.close()
		r.finish()
		wb.mounts.close()
		close(wb.dead)
		p.retire(wb) // a box that ended by itself (its Sentry died) is forgotten at once
	}()
	return wb, nil
}

// warmBox is one running warm box.
type warmBox struct {
	r       *run
	cmd     *exec.Cmd
	fp      string
	ctlFile *os.File      // the control socket
	ctl     *bufio.Reader // its replies
	dir     string        // the working directory inside the box
	dead    chan struct{} // closed once nothing of the box is left
	seccomp bool
	desc    Description // as the box started; the run's own changes when it ends
	// net is the box's network (warm_net_linux.go); nil: it has none.
	net *warmNet
	// private: the box's /proc hides the init from its calls, and its
	// process ids are set back after every call (warm_private_linux.go).
	private bool
	// pids is the box's reset server; nil when not private.
	pids *pidResetter
	// pidsReset reports the end of the last call's reset (call);
	// settle takes it.
	pidsReset chan error
	// mounts watches the box's mounts (watchMounts); nil when they could
	// not be read.
	mounts *mountWatch
	calls  int
	// settled is closed once the init has reported the last call's box
	// clear (or the box was retired); made anew for each call.
	settled chan struct{}
	// idleSince is when the box was last made idle (p.mu).
	idleSince time.Time
	// idleTimer ends the box when it has waited too long for a call;
	// stopped while a call runs.
	idleTimer *time.Timer
	endOnce   sync.Once
}

func (wb *warmBox) alive() bool {
	select {
	case <-wb.dead:
		return false
	default:
		return true
	}
}

// intact reports whether the box's mounts are still those it began with.
// The host removing or replacing a path the box has a mount on (a socket
// covered with /dev/null, a protected file held read-only) detaches that
// mount in every namespace; the next call's plan may name the same path
// and so the same fingerprint, and a fresh box would cover it again: this
// one must not serve it.
func (wb *warmBox) intact() bool {
	if wb.r.box.Tier == sandbox.Tier2 {
		// gVisor's mounts are its own: the gofer holds the host files
		// it was given open, a host unmount detaches nothing inside, and
		// a warm tier-2 box has no --host-uds, so no host socket behind
		// a detached cover is ever reached.
		return true
	}
	return wb.mounts.unchanged()
}

// mountWatch holds the box's mountinfo open: the kernel marks it (poll:
// POLLPRI) at every change of the box's mount namespace, a mount detached
// from the host's side included (umount_tree touches every namespace it
// takes a mount from), so a box whose mounts did not change is known to be
// intact without reading and sorting its mount table before every call.
type mountWatch struct {
	f     *os.File
	first string // the ids of the mounts as the box began, sorted
}

// watchMounts opens the mountinfo of the box whose PID 1 the pidfd names
// and reads the ids of its mounts; the pidfd tells that the process opened
// was that one.
func watchMounts(pidfd int) (*mountWatch, error) {
	pid, err := pidOf(pidfd)
	if err != nil {
		return nil, err
	}
	// Opened blocking, so that the file is not added to the runtime's
	// epoll set: epoll polls the file when told of a change, and that
	// poll would take the mark this one looks for.
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "mountinfo")
	w := &mountWatch{f: f}
	if w.first, err = w.ids(); err != nil {
		f.Close()
		return nil, err
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		f.Close()
		return nil, err // ended while opened: the pid may name another process
	}
	return w, nil
}

// ids reads the mount table from its start and lists its mounts' ids,
// sorted.
func (w *mountWatch) ids() (string, error) {
	data, err := io.ReadAll(io.NewSectionReader(w.f, 0, 1<<30))
	if err != nil {
		return "", err
	}
	var ids []string
	for _, l := range strings.Split(string(data), "\n") {
		if id, _, ok := strings.Cut(l, " "); ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return strings.Join(ids, " "), nil
}

// unchanged reports whether the box's mounts are those it began with: at
// once when the kernel marked no change since the last look, else by
// reading them again (a mount made and gone again leaves them as they
// were). Anything that cannot be told is a change.
func (w *mountWatch) unchanged() bool {
	if w == nil {
		return false
	}
	rc, err := w.f.SyscallConn()
	if err != nil {
		return false
	}
	marked := true
	cerr := rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		n, err := unix.Poll(fds, 0)
		marked = err != nil || n != 0
	})
	if cerr == nil && !marked {
		return true
	}
	now, err := w.ids()
	return err == nil && now == w.first
}

func (w *mountWatch) close() {
	if w != nil {
		w.f.Close()
	}
}

// end closes the control socket, which ends the init and so the box, and
// kills what is left if it does not end at once; it returns when nothing
// of the box is left.
func (wb *warmBox) end() {
	wb.endOnce.Do(func() {
		wb.idleTimer.Stop()
		wb.net.close()
		if wb.pids != nil {
			wb.pids.close() // its reaping ends the box's PID namespace
		}
		wb.ctlFile.Close()
		select {
		case <-wb.dead:
			return
		case <-time.After(time.Second):
		}
		wb.kill()
	})
	<-wb.dead
}

// kill ends every process of the box (its cgroup, bubblewrap and so its
// PID namespace).
func (wb *warmBox) kill() {
	wb.r.killed.Store(true)
	wb.r.killAll(wb.cmd)
}

// call runs req in the box. reuse is false when the box must not serve
// another call (it could not be cleared, the call was cancelled, the init
// failed).
func (wb *warmBox) call(ctx context.Context, req Request, ping pendingPing, start time.Time, ph *warmPhases) (res Result, reuse bool, err error) {
	t0 := time.Now()
	if (wb.net != nil) != (req.Spec.Net != nil) {
		return res, false, errs.Unavailablef("run: a warm box's network is not the call's")
	}
	wb.calls++
	desc := wb.desc
	desc.Notes = append(append([]string(nil), desc.Notes...), fmt.Sprintf("warm box: call %d of this box", wb.calls))
	desc.Env = envNames(req.Spec.Env)
	desc.Seccomp = wb.seccomp
	res.Description = desc

	stdout, stderr, truncated := outputs(req)
	ends, err := callPipes()
	if err != nil {
		return res, false, errs.Wrap(errs.Unavailable, err, "run: warm box pipes")
	}
	defer ends.close()
	c := boxconf.Call{Argv: wb.r.box.CallArgv(req.Argv), Env: req.Spec.Env, Dir: wb.dir, WallMS: req.Spec.Limits.Wall.Milliseconds()}
	if req.Spec.Limits.Wall > 0 && c.WallMS == 0 {
		c.WallMS = 1
	}
	if wb.net != nil {
		if ping == nil {
			return res, false, errs.Unavailablef("run: the box's network was planned without a proxy to reach")
		}
		endWait := starttrace.Begin("warm-net-wait")
		m := <-ping
		endWait()
		if m.err != nil {
			return res, false, errs.Wrap(errs.Unavailable, m.err, "run")
		}
		c.Models = m.models
		// From now until the call's end, what the box's listeners
		// accept is this call's, for its proxy.
		endBegin := starttrace.Begin("warm-net-begin")
		err := wb.net.begin(req.Spec.Net.Serve)
		endBegin()
		if err != nil {
			return res, false, err
		}
	}
	if err := sendCall(wb.ctlFile, c, ends.box()); err != nil {
		return res, false, errs.Wrap(errs.Unavailable, err, "run: hand the call to the warm box")
	}
	ends.closeBox()
	go func() {
		if req.Stdin != nil {
			io.Copy(ends.inW, req.Stdin)
		}
		ends.inW.Close()
	}()
	copied := make(chan struct{}, 2)
	go func() { io.Copy(stdout, ends.outR); copied <- struct{}{} }()
	go func() { io.Copy(stderr, ends.errR); copied <- struct{}{} }()

	t1 := time.Now()
	ph.Send = t1.Sub(t0)
	done, err := wb.await(ctx, req.Spec.Limits.Wall)
	if err != nil {
		return res, false, err
	}
	if wb.private && done.Dirty == "" {
		// Every process of the call has ended (the init reports only
		// then), and the init starts none before the next call: the
		// process ids are set back now, beside the output's drain and
		// the box's clearing (settle waits for it).
		wb.pidsReset = make(chan error, 1)
		go func(c chan<- error) { c <- wb.pids.reset() }(wb.pidsReset)
	}
	t2 := time.Now()
	ph.Box = t2.Sub(t1)
	ph.Start, ph.Run = time.Duration(done.StartUS)*time.Microsecond, time.Duration(done.RunUS)*time.Microsecond
	// Every process in the box has ended, so both pipes reach EOF once
	// what is in them is read: the output is complete. A pipe still open
	// (its end held in flight in a socket) is cut, and the box that holds
	// it serves no other call.
	complete := true
	timeout := time.NewTimer(waitDelay)
	defer timeout.Stop()
	for i := 0; i < 2; i++ {
		select {
		case <-copied:
		case <-timeout.C:
			complete = false
			ends.outR.Close()
			ends.errR.Close()
			<-copied
		}
	}
	ph.Drain = time.Since(t2)
	res.Truncated = truncated()
	res.Description.DurationMS = since(start)
	reuse = done.Dirty == "" && complete
	if done.Dirty != "" {
		res.Description.Notes = append(res.Description.Notes, "warm box: retired after this call: "+done.Dirty)
	}
	if !complete {
		res.Description.Notes = append(res.Description.Notes, "warm box: retired after this call: its output stayed open after every process in the box had ended")
	}
	if wb.r.cg != nil && wb.r.cg.oom() {
		res.Description.Limits.OOM = true
		res.Description.Notes = append(res.Description.Notes, "the memory limit was reached")
		reuse = false
	}
	switch {
	case done.Error != "" && done.NotFound:
		return res, reuse, errs.NotFoundf("run: %s", done.Error)
	case done.Error != "":
		return res, reuse, errs.Unavailablef("run: box: %s", done.Error)
	case done.WallTimeout:
		res.WallTimeout = true
		res.ExitCode = errs.ExitWallClock
		res.Description.Notes = append(res.Description.Notes, fmt.Sprintf("the wall-clock limit of %s ended the command", req.Spec.Limits.Wall))
	case done.Signal != 0:
		res.ExitCode, res.Signal = 128+done.Signal, done.Signal
	default:
		res.ExitCode = done.Exit
	}
	return res, reuse, nil
}

// await reads the init's report of the call's end, or gives up when ctx
// ends, the box dies, or the init is late past the call's wall-clock
// limit.
func (wb *warmBox) await(ctx context.Context, wall time.Duration) (boxconf.CallDone, error) {
	got := make(chan error, 1)
	var done boxconf.CallDone
	go func() { got <- wb.readReport(boxconf.KindDone, &done) }()
	var late <-chan time.Time
	if wall > 0 {
		t := time.NewTimer(wall + wallGrace)
		defer t.Stop()
		late = t.C
	}
	select {
	case err := <-got:
		if err != nil {
			return done, errs.Unavailablef("run: the warm box's init ended while the command ran (%v)", err)
		}
		return done, nil
	case <-ctx.Done():
		return done, errs.Wrap(errs.Unavailable, ctx.Err(), "run: cancelled")
	case <-wb.dead:
		return done, errs.Unavailablef("run: the warm box ended while the command ran")
	case <-late:
		return done, errs.Unavailablef("run: the warm box did not report the end of the command")
	}
}

// clearTimeout bounds the wait for the init's report that a box is clear
// after a call; a box later than that is retired.
const clearTimeout = 30 * time.Second

// awaitClear reads the init's second report on a call: the box is clear,
// or what is left in it.
func (wb *warmBox) awaitClear() (boxconf.BoxClear, error) {
	got := make(chan error, 1)
	var clear boxconf.BoxClear
	go func() { got <- wb.readReport(boxconf.KindClear, &clear) }()
	t := time.NewTimer(clearTimeout)
	defer t.Stop()
	select {
	case err := <-got:
		return clear, err
	case <-wb.dead:
		return clear, errs.Unavailablef("run: the warm box ended while it was cleared")
	case <-t.C:
		return clear, errs.Unavailablef("run: the warm box did not report itself clear after %s", clearTimeout)
	}
}

// readReport reads one line of the init's into v, which must be of the
// kind due: a field v does not have, trailing data or another kind is a
// protocol the runner does not know, and the box is not trusted further.
func (wb *warmBox) readReport(kind string, v any) error {
	line, err := wb.ctl.ReadSlice('\n')
	if err != nil {
		return err
	}
	return decodeReport(line, kind, v)
}

// decodeReport decodes one report line exactly into v and checks its kind.
func decodeReport(line []byte, kind string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("a report that is not one: %v", err)
	}
	if dec.More() {
		return errors.New("a report with trailing data")
	}
	var got string
	switch r := v.(type) {
	case *boxconf.CallDone:
		got = r.Kind
	case *boxconf.BoxClear:
		got = r.Kind
	}
	if got != kind {
		return fmt.Errorf("a report of kind %q where %q was due", got, kind)
	}
	return nil
}

// callEnds are one call's pipes: the box's ends (its stdin, stdout, stderr)
// and the runner's.
type callEnds struct {
	inR, outW, errW *os.File // the box's
	inW, outR, errR *os.File // the runner's
}

func callPipes() (*callEnds, error) {
	var e callEnds
	var err error
	if e.inR, e.inW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if e.outR, e.outW, err = os.Pipe(); err != nil {
		e.close()
		return nil, err
	}
	if e.errR, e.errW, err = os.Pipe(); err != nil {
		e.close()
		return nil, err
	}
	return &e, nil
}

func (e *callEnds) box() []int {
	return []int{int(e.inR.Fd()), int(e.outW.Fd()), int(e.errW.Fd())}
}

func (e *callEnds) closeBox() {
	for _, f := range []*os.File{e.inR, e.outW, e.errW} {
		if f != nil {
			f.Close()
		}
	}
}

func (e *callEnds) close() {
	e.closeBox()
	for _, f := range []*os.File{e.inW, e.outR, e.errR} {
		if f != nil {
			f.Close()
		}
	}
}

// sendCall writes one call: its length and JSON, with the call's three
// descriptors attached to the first bytes.
func sendCall(ctl *os.File, c boxconf.Call, fds []int) error {
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if len(body) > boxconf.MaxCall {
		return errs.Invalidf("run: the command line and environment are %d bytes, over %d", len(body), boxconf.MaxCall)
	}
	msg := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	msg = append(msg, body...)
	rc, err := ctl.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	n := 0
	cerr := rc.Write(func(fd uintptr) bool {
		n, serr = unix.SendmsgN(int(fd), msg, unix.UnixRights(fds...), nil, 0)
		return serr != unix.EAGAIN
	})
	if cerr != nil {
		return cerr
	}
	if serr != nil {
		return serr
	}
	if n < len(msg) {
		_, err = ctl.Write(msg[n:])
	}
	return err
}

// serveInit starts a warm box: bubblewrap with airlock's init as PID 1,
// which reports on the control socket that it is ready.
type serveInit struct {
	diag  bytes.Buffer
	ready boxconf.Ready
}

var _ tierRunner = (*serveInit)(nil)

func (*serveInit) describe(*Description) {}

func (t *serveInit) command(r *run, cmd *exec.Cmd, _ io.Writer) error {
	cmd.Path, cmd.Args = r.box.Path, r.box.CommandLine(nil)
	cmd.Stderr = &limitedBuffer{b: &t.diag, n: 64 << 10}
	cmd.ExtraFiles = r.box.ExtraFiles
	return nil
}

func (*serveInit) started(r *run, cmd *exec.Cmd) int { return bwrapStarted(r, cmd) }

// configure sends the box's configuration and waits for the init's first
// line.
func (t *serveInit) configure(r *run) error {
	if err := r.box.SendConfig(nil); err != nil {
		return err
	}
	ctl := r.box.Control()
	ctl.SetReadDeadline(time.Now().Add(readyTimeout))
	defer ctl.SetReadDeadline(time.Time{})
	// One line, read a byte at a time so nothing after it is taken from
	// the socket before the call's reader owns it.
	var line []byte
	var b [1]byte
	for len(line) < 1<<16 {
		if _, err := ctl.Read(b[:]); err != nil {
			msg := oneLine(t.diag.String())
			if msg == "" {
				msg = err.Error()
			}
			return fmt.Errorf("the warm box could not be built: %s", msg)
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	if err := json.Unmarshal(line, &t.ready); err != nil {
		return fmt.Errorf("the warm box's init: %v", err)
	}
	if !t.ready.Ready {
		return fmt.Errorf("the warm box's init: %s", t.ready.Error)
	}
	return nil
}

func (*serveInit) exit(*run, *exec.Cmd, error, *Result) error { return nil }
