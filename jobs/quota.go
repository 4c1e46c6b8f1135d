package jobs

// The server's quotas: how many jobs may hold a box at once in a pool and
// for a tenant. This file imports no Temporal package: the counter is
// plain Go the server keeps (and persists); quota_workflow.go is the
// workflow's side of it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// AnyName is the key of a quota that holds every pool or tenant the
// quotas do not name.
const AnyName = "*"

// DefaultTenant is the tenant of the server's one operator token
// (STATE/token) and of its admins.
const DefaultTenant = "default"

// QuotaConfig is the server's quotas. A pool or tenant no quota names
// (and no AnyName quota holds) is not bounded.
type QuotaConfig struct {
	// Pools bounds the jobs that hold a box at once in each pool.
	Pools map[string]int
	// Tenants bounds the jobs that hold a box at once for each tenant,
	// across pools.
	Tenants map[string]int
	// Held are the slots saved before a restart of the server; Save,
	// when set, is given every slot held after each change, and a slot is
	// granted only once it was saved, so a restart never forgets one.
	Held []Slot
	Save func([]Slot) error
	Log  *slog.Logger
}

// SlotRequest is a job's ask for a slot, and its release.
type SlotRequest struct {
	Job    string `json:"job"`
	Pool   string `json:"pool"`
	Tenant string `json:"tenant"`
	// Wait is how long the server holds the ask for a slot to free up
	// before it answers that there is none.
	Wait time.Duration `json:"wait,omitempty"`
}

// SlotGrant is the answer to a SlotRequest.
type SlotGrant struct {
	Granted bool `json:"granted"`
	// Full names the quota that is full, with its flag, when not granted.
	Full string `json:"full,omitempty"`
}

// Slot is a job holding a box of its pool's and tenant's quotas.
type Slot struct {
	Job    string    `json:"job"`
	Pool   string    `json:"pool"`
	Tenant string    `json:"tenant"`
	Since  time.Time `json:"since"`
}

// QuotaUsage is what GET /v1/quotas shows: each quota, and the slots held.
type QuotaUsage struct {
	Pools   map[string]int `json:"pools"`
	Tenants map[string]int `json:"tenants"`
	Held    []Slot         `json:"held"`
}

// Quotas counts the slots jobs hold against the server's quotas. A slot
// is taken before a job's claim and given back when the job ends,
// whichever way; one still held by a job that no longer runs (a workflow
// terminated around the API, a release lost) is found by sweep and freed.
type Quotas struct {
	cfg QuotaConfig
	// running says whether job's workflow still runs; nil trusts the
	// slots as held.
	running func(ctx context.Context, job string) (bool, error)
	now     func() time.Time

	mu   sync.Mutex
	held map[string]Slot
	// released are the jobs whose slot was given back: an ask of theirs
	// still on its way (the job was killed while it waited) is refused,
	// so it cannot take a slot nobody will release.
	released map[string]time.Time
	// changed is closed (and replaced) whenever a slot is given back, to
	// wake the asks waiting for one.
	changed   chan struct{}
	lastSweep time.Time
}

// releasedFor is how long a released job's asks are refused: longer than
// any ask takes (slotWait and its start-to-close).
const releasedFor = 10 * time.Minute

// sweepEvery bounds how often a full quota checks its holders still run.
const sweepEvery = 10 * time.Second

// NewQuotas returns the quotas of cfg, with the slots its file kept.
func NewQuotas(cfg QuotaConfig) (*Quotas, error) {
	for what, m := range map[string]map[string]int{"pool": cfg.Pools, "tenant": cfg.Tenants} {
		for name, n := range m {
			if name != AnyName {
				if err := CheckName(what, name); err != nil {
					return nil, err
				}
			}
			if n < 1 {
				return nil, errs.Invalidf("%s quota %s=%d: want at least 1", what, name, n)
			}
		}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	q := &Quotas{cfg: cfg, now: time.Now, held: map[string]Slot{}, released: map[string]time.Time{}, changed: make(chan struct{})}
	for _, s := range cfg.Held {
		if CheckName("job id", s.Job) == nil {
			q.held[s.Job] = s
		}
	}
	return q, nil
}

// limit is the quota of name in m, or 0 for none.
func limit(m map[string]int, name string) (n int, key string) {
	if n, ok := m[name]; ok {
		return n, name
	}
	return m[AnyName], AnyName
}

// Applies says whether a quota bounds a job of pool and tenant: one names
// the pool or the tenant, or a * quota holds either. A job no quota
// applies to takes no slot (Job.QuotaFree), so it pays no round trip to
// the server's queue for one.
func (q *Quotas) Applies(pool, tenant string) bool {
	if n, _ := limit(q.cfg.Pools, pool); n > 0 {
		return true
	}
	n, _ := limit(q.cfg.Tenants, tenant)
	return n > 0
}

// adopt holds slot s for a running job that took none (adoptQuotaFree),
// whether or not the quota has room: the job runs already.
func (q *Quotas) adopt(s Slot) error {
	if err := errors.Join(CheckName("job id", s.Job), CheckName("pool", s.Pool), CheckName("tenant", s.Tenant)); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.held[s.Job]; ok {
		return nil
	}
	q.held[s.Job] = s
	return q.saveLocked()
}

// fullLocked names the quota that leaves no room for req, or "".
func (q *Quotas) fullLocked(req SlotRequest) string {
	var pool, tenant int
	for _, s := range q.held {
		if s.Pool == req.Pool {
			pool++
		}
		if s.Tenant == req.Tenant {
			tenant++
		}
	}
	if n, key := limit(q.cfg.Pools, req.Pool); n > 0 && pool >= n {
		return fmt.Sprintf("pool %s holds its quota of %d at once (--pool-quota %s=%d)", req.Pool, n, key, n)
	}
	if n, key := limit(q.cfg.Tenants, req.Tenant); n > 0 && tenant >= n {
		return fmt.Sprintf("tenant %s holds its quota of %d at once (--tenant-quota %s=%d)", req.Tenant, n, key, n)
	}
	return ""
}

// Acquire takes a slot for req's job, waiting up to req.Wait for one to
// free up. A job that holds one already is granted again (the ask was
// retried); a job whose slot was released is refused. A slot is granted
// only once it is saved, so a restart cannot forget it.
func (q *Quotas) Acquire(ctx context.Context, req SlotRequest) (SlotGrant, error) {
	if err := errors.Join(CheckName("job id", req.Job), CheckName("pool", req.Pool), CheckName("tenant", req.Tenant)); err != nil {
		return SlotGrant{}, err
	}
	timer := time.NewTimer(max(req.Wait, 0))
	defer timer.Stop()
	for {
		q.mu.Lock()
		if _, ok := q.released[req.Job]; ok {
			q.mu.Unlock()
			return SlotGrant{Full: "job " + req.Job + " ended"}, nil
		}
		if _, ok := q.held[req.Job]; ok {
			q.mu.Unlock()
			return SlotGrant{Granted: true}, nil
		}
		full := q.fullLocked(req)
		if full == "" {
			q.held[req.Job] = Slot{Job: req.Job, Pool: req.Pool, Tenant: req.Tenant, Since: q.now()}
			if err := q.saveLocked(); err != nil {
				delete(q.held, req.Job)
				q.mu.Unlock()
				return SlotGrant{}, err
			}
			q.mu.Unlock()
			return SlotGrant{Granted: true}, nil
		}
		changed := q.changed
		sweep := q.now().Sub(q.lastSweep) >= sweepEvery
		if sweep {
			q.lastSweep = q.now()
		}
		q.mu.Unlock()
		if sweep && q.Sweep(ctx) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-timer.C:
			return SlotGrant{Full: full}, nil
		case <-ctx.Done():
			return SlotGrant{}, errs.Wrap(errs.Timeout, ctx.Err(), "quota slot for job %s", req.Job)
		}
	}
}

// Release gives job's slot back (a job that holds none is no error) and
// refuses its later asks.
func (q *Quotas) Release(job string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	for j, at := range q.released {
		if now.Sub(at) > releasedFor {
			delete(q.released, j)
		}
	}
	q.released[job] = now
	if _, ok := q.held[job]; !ok {
		return nil
	}
	delete(q.held, job)
	q.wakeLocked()
	return q.saveLocked()
}

func (q *Quotas) wakeLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// Sweep frees the slots of jobs whose workflow no longer runs (ended
// without its release: terminated around the API, or its release lost)
// and returns how many it freed. A job whose state cannot be read keeps
// its slot.
func (q *Quotas) Sweep(ctx context.Context) int {
	if q.running == nil {
		return 0
	}
	q.mu.Lock()
	jobs := make([]string, 0, len(q.held))
	for j := range q.held {
		jobs = append(jobs, j)
	}
	q.mu.Unlock()
	var gone []string
	for _, j := range jobs {
		if ok, err := q.running(ctx, j); err == nil && !ok {
			gone = append(gone, j)
		}
	}
	if len(gone) == 0 {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, j := range gone {
		q.cfg.Log.Warn("quota slot freed: its job no longer runs", "job", j)
		delete(q.held, j)
	}
	q.wakeLocked()
	if err := q.saveLocked(); err != nil {
		q.cfg.Log.Warn("quota slots not saved", "err", err)
	}
	return len(gone)
}

// saveLocked hands the slots held to Save.
func (q *Quotas) saveLocked() error {
	if q.cfg.Save == nil {
		return nil
	}
	if err := q.cfg.Save(q.slotsLocked()); err != nil {
		return errs.Wrap(errs.Unavailable, err, "save the quota slots")
	}
	return nil
}

func (q *Quotas) slotsLocked() []Slot {
	out := make([]Slot, 0, len(q.held))
	for _, s := range q.held {
		out = append(out, s)
	}
	sort.Slice(out, func(a, b int) bool {
		return out[a].Since.Before(out[b].Since) || out[a].Since.Equal(out[b].Since) && out[a].Job < out[b].Job
	})
	return out
}

// Usage is the quotas and the slots held now.
func (q *Quotas) Usage() QuotaUsage {
	q.mu.Lock()
	defer q.mu.Unlock()
	u := QuotaUsage{Pools: map[string]int{}, Tenants: map[string]int{}, Held: q.slotsLocked()}
	for k, v := range q.cfg.Pools {
		u.Pools[k] = v
	}
	for k, v := range q.cfg.Tenants {
		u.Tenants[k] = v
	}
	return u
}

// overQuotaMessage is the failure of a job that got no slot within its
// claim timeout, naming the quota and the fixes.
func overQuotaMessage(j Job, waited time.Duration, full string) string {
	if full == "" {
		full = "the server's quota check did not answer"
	}
	fix := "raise the quota on the server, or end one of the jobs that hold it (`airlock job list --running`, `airlock job kill ID`), then start the job again"
	return fmt.Sprintf("job %s got no quota slot within %s: %s: %s", j.ID, waited, full, fix)
}
