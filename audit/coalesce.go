package audit

import (
	"sync"
	"time"
)

// A box can refuse itself thousands of connections a second (every one a
// record of about 600 bytes, fsynced), which would grow the host's log
// outside every limit the box runs under. A Coalescer keeps one source's
// refusals bounded: the first ones, and then a trickle at a fixed rate,
// are recorded one by one; the rest are counted into a Summary that is
// recorded when its window ends. Nothing is lost: a summary holds the
// count, the first and last time, and every distinct destination with its
// own count, up to a cap past which refusals are counted as overflow.
// Windows double after each summary, up to MaxWindow, so a flood of any
// length costs a few records per window, not one per refusal.

// Defaults of CoalesceOptions.
const (
	DefaultBurst       = 32
	DefaultEvery       = 10 * time.Second
	DefaultWindow      = 10 * time.Second
	DefaultMaxWindow   = 5 * time.Minute
	DefaultMaxDistinct = 256
	// maxReasons bounds the distinct reasons one summary counts; the
	// reason is ours (the proxy's, the broker's), so a handful is all
	// there is.
	maxReasons = 16
)

// CoalesceOptions configure NewCoalescer. The zero value takes every
// default.
type CoalesceOptions struct {
	// Burst is how many refusals are recorded one by one before counting
	// starts; 0 is DefaultBurst.
	Burst int
	// Every is the rate at which the allowance refills: one more refusal
	// recorded on its own per Every; 0 is DefaultEvery.
	Every time.Duration
	// Window is how long the first summary counts; each next one counts
	// twice as long, up to MaxWindow. 0 is DefaultWindow, and a zero
	// MaxWindow is DefaultMaxWindow.
	Window, MaxWindow time.Duration
	// MaxDistinct caps the destinations a summary names one by one; 0 is
	// DefaultMaxDistinct.
	MaxDistinct int
}

// Summary is the counted refusals of one window. It is the Fields of a
// "<kind>.coalesced" record.
type Summary struct {
	// Count is every refusal counted, overflow included.
	Count int64 `json:"count"`
	// First and Last are the times of the first and last of them.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Destinations counts the refusals of each destination.
	Destinations map[string]int64 `json:"destinations"`
	// Overflow counts the refusals whose destination was not among the
	// first MaxDistinct of the window.
	Overflow int64 `json:"overflow,omitempty"`
	// Reasons counts the refusals of each reason; OtherReasons those past
	// the cap on distinct reasons.
	Reasons      map[string]int64 `json:"reasons,omitempty"`
	OtherReasons int64            `json:"other_reasons,omitempty"`
}

// Coalescer decides which refusals of one source are recorded as they are
// and counts the others. It is safe for concurrent use. Its clock is the
// refusals' own times, so it needs no timer: a window ends at the first
// refusal after it or at Flush.
type Coalescer struct {
	mu     sync.Mutex
	o      CoalesceOptions
	tokens float64
	last   time.Time // when tokens was last refilled
	window time.Duration
	cur    *Summary
	due    time.Time // when cur's window ends
}

// NewCoalescer returns a Coalescer with o's limits.
func NewCoalescer(o CoalesceOptions) *Coalescer {
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.MaxWindow <= 0 {
		o.MaxWindow = DefaultMaxWindow
	}
	if o.MaxWindow < o.Window {
		o.MaxWindow = o.Window
	}
	if o.MaxDistinct <= 0 {
		o.MaxDistinct = DefaultMaxDistinct
	}
	return &Coalescer{o: o, tokens: float64(o.Burst), window: o.Window}
}

// Take is one refusal at t to dest for reason. pass is true when it is to
// be recorded as it is; otherwise it was counted. due, when not nil, is a
// summary whose window ended before t: record it first.
func (c *Coalescer) Take(t time.Time, dest, reason string) (pass bool, due *Summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && !t.Before(c.due) {
		due = c.cur
		c.cur = nil
		if t.Sub(c.due) > c.o.MaxWindow {
			// Quiet for a whole long window: the flood is over, and the
			// next one starts with short windows again.
			c.window = c.o.Window
		} else {
			c.window = min(2*c.window, c.o.MaxWindow)
		}
	}
	c.refill(t)
	if c.tokens >= 1 {
		c.tokens--
		return true, due
	}
	if c.cur == nil {
		c.cur = &Summary{First: t, Destinations: map[string]int64{}, Reasons: map[string]int64{}}
		c.due = t.Add(c.window)
	}
	c.count(t, dest, reason)
	return false, due
}

// refill adds the allowance earned since the last refusal, up to Burst.
// Times that go backwards earn nothing.
func (c *Coalescer) refill(t time.Time) {
	if c.last.IsZero() {
		c.last = t
		return
	}
	if d := t.Sub(c.last); d > 0 {
		c.tokens = min(float64(c.o.Burst), c.tokens+float64(d)/float64(c.o.Every))
		c.last = t
	}
}

func (c *Coalescer) count(t time.Time, dest, reason string) {
	s := c.cur
	s.Count++
	if t.After(s.Last) {
		s.Last = t
	}
	if t.Before(s.First) {
		s.First = t
	}
	if _, ok := s.Destinations[dest]; ok || len(s.Destinations) < c.o.MaxDistinct {
		s.Destinations[dest]++
	} else {
		s.Overflow++
	}
	if _, ok := s.Reasons[reason]; ok || len(s.Reasons) < maxReasons {
		s.Reasons[reason]++
	} else {
		s.OtherReasons++
	}
}

// Flush returns the summary being counted, nil when nothing is; counting
// starts afresh with the next refusal. Call it when the source is done
// (the box stopped) so the last window is recorded too.
func (c *Coalescer) Flush() *Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cur
	c.cur = nil
	return s
}

// Fields is s as the Fields of a record.
func (s *Summary) Fields() map[string]any {
	return map[string]any{"coalesced": s}
}
