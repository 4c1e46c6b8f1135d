package approvals

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-run/airlock/audit"
	"github.com/airlock-run/airlock/errs"
)

// Options configure a Broker. The zero value asks nobody: every escalation
// waits for its timeout and is denied as "timeout".
type Options struct {
	// Terminal is where a person answers: OpenTerminal's /dev/tty, or a
	// test's pipes. nil means no terminal.
	Terminal io.ReadWriter
	// SocketDir is the directory of the approvals socket (DefaultSocketDir);
	// "" means no socket.
	SocketDir string
	// GrantsFile is where allow-always saves grants; "" means allow-always
	// is not offered.
	GrantsFile string
	// Clock is the time source; nil means the real clock.
	Clock Clock
	// Log receives diagnostics; nil means they are dropped.
	Log *slog.Logger
	// Audit receives a "grant.saved" record for every grant saved; nil
	// means the mediator's decision record is the only trace.
	Audit audit.Sink
	// Person is the name in "person:<name>"; "" means the login name of the
	// user airlock runs as (the socket admits no one else).
	Person string
	// Pid names the socket and prefixes IDs; 0 means os.Getpid().
	Pid int
}

// Broker asks a person about escalated calls. It is safe for concurrent
// use; questions on the terminal are asked one at a time, and all of them
// can be answered over the socket at any time.
type Broker struct {
	opts   Options
	clock  Clock
	log    *slog.Logger
	person string
	// personName is person, or the login name, looked up on first use.
	personName func() string
	pid        int

	mu      sync.Mutex
	pending map[string]*pending
	order   []string

	// sock is the socket the broker listens on once a call is put to a
	// person; ln and sockPath are set then (listen).
	sock     socketState
	ln       *net.UnixListener
	sockPath string
	// skipPeerCheck turns off the SO_PEERCRED check; tests set it to show
	// that the check is what stops another user.
	skipPeerCheck atomic.Bool
	// skipNamespaceCheck turns off the namespace check, likewise.
	skipNamespaceCheck atomic.Bool

	termSem    chan struct{}
	lines      chan string
	readerOnce sync.Once

	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	// refusals counts the socket's refused connections past a rate, so a
	// box that dials the socket in a loop costs a bounded number of
	// warning lines and audit records (see refused).
	refusals *audit.Coalescer
}

type pendingState uint8

const (
	open pendingState = iota
	claimed
)

type pending struct {
	req       Request
	grantLine string // what allow-always saves; "" when not offered
	created   time.Time
	deadline  time.Time
	state     pendingState
	done      chan Outcome // receives the one outcome
	resolved  chan struct{}
	final     Outcome
}

// New starts a broker. When SocketDir is set, New makes and checks the
// directory, and the broker listens on its socket there from the first
// call it puts to a person until Close (which removes the socket file):
// the socket serves nothing but pending escalations, and most kernels
// never ask a person, so a kernel built for every call (`airlock warm`)
// makes no socket file for it.
func New(opts Options) (*Broker, error) {
	b := &Broker{
		opts: opts, clock: opts.Clock, log: opts.Log, person: opts.Person, pid: opts.Pid,
		pending: map[string]*pending{},
		termSem: make(chan struct{}, 1),
		lines:   make(chan string),
		closed:  make(chan struct{}),

		refusals: audit.NewCoalescer(audit.CoalesceOptions{}),
	}
	if b.clock == nil {
		b.clock = realClock{}
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.pid == 0 {
		b.pid = os.Getpid()
	}
	// The person's login name is looked up (the user database, through
	// the C library's name service) only when a person first answers:
	// most kernels never ask one.
	b.personName = sync.OnceValue(func() string {
		if b.person != "" {
			return b.person
		}
		return loginName()
	})
	if opts.SocketDir != "" {
		if err := b.prepareSocket(opts.SocketDir); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func loginName() string {
	uid := strconv.Itoa(os.Geteuid())
	if name := passwdName("/etc/passwd", uid); name != "" {
		return name
	}
	return "uid" + uid
}

// passwdName is the name the passwd file gives uid, "" when none. The
// file is read directly: os/user's lookups (LookupId too) first try
// user.Current, which in a build without cgo, for a uid the file lacks,
// takes the name from $USER, and whoever starts airlock sets that.
func passwdName(file, uid string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 3 && f[2] == uid && f[0] != "" && !strings.HasPrefix(f[0], "+") && !strings.HasPrefix(f[0], "-") {
			return f[0]
		}
	}
	return ""
}

// SocketPath is the socket this broker listens on, "" while none (no
// SocketDir, or no call put to a person yet).
func (b *Broker) SocketPath() string {
	b.sock.mu.Lock()
	defer b.sock.mu.Unlock()
	return b.sockPath
}

// Close stops the socket and denies (as "error") every question still
// pending.
func (b *Broker) Close() error {
	var err error
	b.closeOnce.Do(func() {
		close(b.closed)
		// After a listen under way: none starts once closed is.
		b.sock.mu.Lock()
		b.sock.tried = true
		ln, path := b.ln, b.sockPath
		b.sock.mu.Unlock()
		if ln != nil {
			err = ln.Close()
			os.Remove(path)
		}
		b.wg.Wait()
		// Every connection is done: the last count is complete.
		if s := b.refusals.Flush(); s != nil {
			b.refusedSummary(s)
		}
	})
	return err
}

// refused reports a connection to the socket that was refused: what (a
// short sentence, the same for every refusal of its kind, also the key
// the refusals are counted by) and the details of this one. The first
// refusals and then a trickle of them are a warning line and an
// "approvals.refused" record each; the rest are counted (audit.Coalescer)
// and reported once per window as one line and one
// "approvals.refused.coalesced" record with the count, the first and last
// time and the count of each kind.
func (b *Broker) refused(what string, details ...any) {
	now := b.clock.Now()
	pass, due := b.refusals.Take(now, what, what)
	if due != nil {
		b.refusedSummary(due)
	}
	if !pass {
		return
	}
	b.log.Warn(what, details...)
	if b.opts.Audit == nil {
		return
	}
	fields := map[string]any{}
	for i := 0; i+1 < len(details); i += 2 {
		if k, ok := details[i].(string); ok {
			fields[k] = fmt.Sprint(details[i+1])
		}
	}
	if err := b.opts.Audit.Append(audit.Record{Kind: "approvals.refused", Time: now, Verdict: "deny",
		Reason: what, Decider: "approvals", Fields: fields}); err != nil {
		b.log.Error("audit of a refused connection failed", "err", err)
	}
}

// refusedSummary reports the refusals counted in one window.
func (b *Broker) refusedSummary(s *audit.Summary) {
	b.log.Warn("approvals: refused connections to the socket, counted", "count", s.Count,
		"first", s.First, "last", s.Last, "kinds", s.Destinations)
	if b.opts.Audit == nil {
		return
	}
	if err := b.opts.Audit.Append(audit.Record{Kind: "approvals.refused.coalesced", Time: s.Last, Verdict: "deny",
		Reason: "refused connections counted past the record rate", Decider: "approvals", Fields: s.Fields()}); err != nil {
		b.log.Error("audit of refused connections failed", "err", err)
	}
}

// Ask puts req to a person and waits for the answer, at most timeout
// (DefaultTimeout when zero or less). It never returns an allow unless a
// person chose one. ctx's deadline passing counts as the timeout; ctx
// being cancelled, Close, or any failure is an Error outcome.
func (b *Broker) Ask(ctx context.Context, req Request, timeout time.Duration) Outcome {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	now := b.clock.Now()
	p := &pending{created: now, deadline: now.Add(timeout), done: make(chan Outcome, 1), resolved: make(chan struct{})}
	if req.Grant != nil {
		g := *req.Grant
		if g.Created.IsZero() {
			g.Created = now.UTC()
		}
		req.Grant = &g
		switch line, err := GrantLine(b.grantsFileOr(".yaml"), g); {
		case b.opts.GrantsFile == "":
			req.Grant, req.NoGrant = nil, "no grants file is configured"
		case err != nil:
			req.Grant, req.NoGrant = nil, err.Error()
		default:
			p.grantLine = line
		}
	}
	// The socket is up before the call is pending: whoever lists what
	// is pending finds it there.
	if err := b.listen(); err != nil {
		return Outcome{Answer: Error, Decider: "error", Err: err}
	}
	if err := b.register(&req, p); err != nil {
		return Outcome{Answer: Error, Decider: "error", Err: err}
	}
	b.log.Info("escalation waiting", "id", req.ID, "call", ShowCall(req), "timeout", timeout)
	timer := b.clock.After(timeout)
	if b.opts.Terminal != nil {
		// Not counted in b.wg: a terminal write can block for good (a
		// stopped tty), and Close must not wait for it.
		go b.prompt(p)
	}
	select {
	case <-p.resolved:
	case <-timer:
		b.settle(p, Outcome{Answer: Timeout, Decider: "timeout"})
	case <-ctx.Done():
		// A caller's deadline passing is the same event as the timeout: no
		// one answered in time. Only a cancellation is an error.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			b.settle(p, Outcome{Answer: Timeout, Decider: "timeout"})
		} else {
			b.settle(p, Outcome{Answer: Error, Decider: "error", Err: ctx.Err()})
		}
	case <-b.closed:
		b.settle(p, Outcome{Answer: Error, Decider: "error", Err: errs.Unavailablef("approvals: broker closed")})
	}
	o := <-p.done
	b.log.Info("escalation ended", "id", req.ID, "answer", o.Answer, "decider", o.Decider, "via", o.Via)
	return o
}

func (b *Broker) grantsFileOr(def string) string {
	if b.opts.GrantsFile != "" {
		return b.opts.GrantsFile
	}
	return def
}

func (b *Broker) register(req *Request, p *pending) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if req.ID != "" {
		if _, dup := b.pending[req.ID]; dup {
			return errs.Invalidf("approvals: escalation %s is already pending", Show(req.ID))
		}
	}
	for req.ID == "" {
		var r [4]byte
		if _, err := rand.Read(r[:]); err != nil {
			return errs.Wrap(errs.Unavailable, err, "approvals: make an escalation id")
		}
		id := strconv.Itoa(b.pid) + "-" + hex.EncodeToString(r[:])
		if _, dup := b.pending[id]; !dup {
			req.ID = id
		}
	}
	p.req = *req
	b.pending[req.ID] = p
	b.order = append(b.order, req.ID)
	return nil
}

// claim takes p out of the pending set; only the caller that claims it may
// finish it, which is what makes the first answer (or the timeout) win.
func (b *Broker) claim(p *pending) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.state != open {
		return false
	}
	p.state = claimed
	delete(b.pending, p.req.ID)
	for i, id := range b.order {
		if id == p.req.ID {
			b.order = append(b.order[:i], b.order[i+1:]...)
			break
		}
	}
	return true
}

func (b *Broker) finish(p *pending, o Outcome) {
	p.final = o
	p.done <- o
	close(p.resolved)
}

// settle ends p with o unless someone else already claimed it.
func (b *Broker) settle(p *pending, o Outcome) {
	if b.claim(p) {
		b.finish(p, o)
	}
}

// errDecided is what an answer gets when the question already ended.
var errDecided = errs.NotFoundf("no such pending escalation (it was answered, timed out, or never existed)")

// answer applies a person's answer to p. sentGrant is the grant text the
// person was shown (the socket sends it back; the terminal showed
// p.grantLine itself).
func (b *Broker) answer(p *pending, a Answer, parseErr error, via, sentGrant string) (Outcome, error) {
	if !b.claim(p) {
		return Outcome{}, errDecided
	}
	o := Outcome{Answer: a, Decider: "person:" + b.personName(), Via: via}
	switch {
	case parseErr != nil:
		o = Outcome{Answer: Error, Decider: "error", Via: via, Err: parseErr}
	case a == AllowAlways && p.grantLine == "":
		o = Outcome{Answer: Error, Decider: "error", Via: via, Err: errs.Invalidf("allow-always is not offered for this call: %s", p.req.NoGrant)}
	case a == AllowAlways && sentGrant != p.grantLine:
		o = Outcome{Answer: Error, Decider: "error", Via: via, Err: errs.Invalidf("the grant that was shown is not the one that would be saved")}
	case a == AllowAlways:
		if _, err := SaveGrant(b.opts.GrantsFile, *p.req.Grant); err != nil {
			o = Outcome{Answer: Error, Decider: "error", Via: via, Err: err}
			break
		}
		g := *p.req.Grant
		o.Grant, o.GrantsFile = &g, b.opts.GrantsFile
		if b.opts.Audit != nil {
			if err := b.opts.Audit.Append(audit.Record{
				Kind: "grant.saved", Decider: o.Decider, Reason: p.req.Reason, Rule: p.req.Rule,
				Fields: map[string]any{"grant": p.grantLine, "file": b.opts.GrantsFile, "escalation": p.req.ID},
			}); err != nil {
				b.log.Error("audit of a saved grant failed", "err", err)
			}
		}
	}
	b.finish(p, o)
	return o, o.Err
}

func (b *Broker) lookup(id string) (*pending, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.pending[id]
	return p, ok
}

// snapshot lists what is pending, oldest first.
func (b *Broker) snapshot() []Pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Pending, 0, len(b.order))
	for _, id := range b.order {
		p := b.pending[id]
		out = append(out, Pending{Request: p.req, Pid: b.pid, Created: p.created, Deadline: p.deadline, Grant: p.grantLine})
	}
	return out
}

// Pending is an escalation waiting for an answer, as `approvals list`
// shows it.
type Pending struct {
	Request
	Pid      int       `json:"pid"`
	Created  time.Time `json:"created"`
	Deadline time.Time `json:"deadline"`
	// Grant is the exact line allow-always would add to the grants file;
	// "" when allow-always is not offered.
	Grant string `json:"grant,omitempty"`
}

// prompt asks p on the terminal, once the terminal is free.
func (b *Broker) prompt(p *pending) {
	select {
	case b.termSem <- struct{}{}:
	case <-p.resolved:
		return
	}
	defer func() { <-b.termSem }()
	b.readerOnce.Do(func() { go b.readTerminal() })
	// Lines typed while no question was shown belong to no question:
	// discard what the terminal holds, then what the reader holds.
	flushInput(b.opts.Terminal)
	for drained := false; !drained; {
		select {
		case <-b.lines:
		default:
			drained = true
		}
	}
	w := b.opts.Terminal
	if _, err := io.WriteString(w, promptText(b.snapshotOf(p))); err != nil {
		b.answer(p, Error, fmt.Errorf("write the prompt: %w", err), "terminal", "")
		return
	}
	select {
	case line, ok := <-b.lines:
		var a Answer
		var err error
		if !ok {
			err = errors.New("the terminal was closed")
		} else {
			a, err = ParseAnswer(strings.TrimSpace(line))
		}
		o, aerr := b.answer(p, a, err, "terminal", p.grantLine)
		if errors.Is(aerr, errDecided) {
			o = p.final
		}
		fmt.Fprintln(w, resultText(o))
	case <-p.resolved:
		fmt.Fprintln(w, "\n"+resultText(p.final))
	}
}

func (b *Broker) snapshotOf(p *pending) Pending {
	return Pending{Request: p.req, Pid: b.pid, Created: p.created, Deadline: p.deadline, Grant: p.grantLine}
}

// maxAnswerLine bounds one line read from the terminal or the socket.
const maxAnswerLine = 64 << 10

// readTerminal feeds lines from the terminal to whichever prompt is
// showing; it ends when the terminal does.
func (b *Broker) readTerminal() {
	r := bufio.NewReaderSize(b.opts.Terminal, 4096)
	for {
		line, err := r.ReadString('\n')
		if len(line) > maxAnswerLine {
			line = "(too long)"
		}
		if err != nil && line == "" {
			close(b.lines)
			return
		}
		select {
		case b.lines <- line:
		case <-b.closed:
			return
		}
		if err != nil {
			close(b.lines)
			return
		}
	}
}

// promptText is the question as the terminal shows it. Every part that
// came from the agent goes through Show.
func promptText(p Pending) string {
	var s strings.Builder
	fmt.Fprintf(&s, "\nairlock: a call needs your approval [%s]\n", Show(p.ID))
	fmt.Fprintf(&s, "  %-9s%s\n", "call:", ShowCall(p.Request))
	if p.Command != "" && (len(p.Argv) > 0 || p.Tool != "") {
		fmt.Fprintf(&s, "  %-9s%s\n", "from:", Show(p.Command))
	}
	if p.Workdir != "" {
		fmt.Fprintf(&s, "  %-9s%s\n", "in:", Show(p.Workdir))
	}
	fmt.Fprintf(&s, "  %-9s%s\n", "why:", Show(p.Reason))
	if p.Rule != "" {
		fmt.Fprintf(&s, "  %-9s%s\n", "rule:", Show(p.Rule))
	}
	secs := int(p.Deadline.Sub(p.Created).Round(time.Second) / time.Second)
	if p.Grant != "" {
		fmt.Fprintf(&s, "  always saves: %s\n", p.Grant)
		fmt.Fprintf(&s, "  [o]nce, [a]lways, [d]eny (denied in %ds)? ", secs)
	} else {
		if p.NoGrant != "" {
			fmt.Fprintf(&s, "  (allow always is not offered: %s)\n", Show(p.NoGrant))
		}
		fmt.Fprintf(&s, "  [o]nce, [d]eny (denied in %ds)? ", secs)
	}
	return s.String()
}

func resultText(o Outcome) string {
	switch o.Answer {
	case AllowOnce:
		return "airlock: allowed once (" + o.Decider + ", " + o.Via + ")"
	case AllowAlways:
		return "airlock: allowed; grant saved to " + Show(o.GrantsFile) + " (" + o.Decider + ", " + o.Via + ")"
	case Deny:
		return "airlock: denied (" + o.Decider + ", " + o.Via + ")"
	case Timeout:
		return "airlock: denied: nobody answered in time"
	}
	msg := "unknown"
	if o.Err != nil {
		msg = oneLine(o.Err.Error())
	}
	return "airlock: denied: " + Show(msg)
}
