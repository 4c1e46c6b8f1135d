package sandbox

import (
	"slices"
	"sync"
)

// CacheConfig names what one kernel keeps on the host between its boxes'
// plans and across runs. Each kernel has its own (wiring builds it from
// the kernel's policy and record of box-writable paths): a node runs many
// jobs in one process, their caches in one directory, and each job's
// plans weigh that directory against the job's own paths, never the
// paths of whichever job started last.
type CacheConfig struct {
	// ProbeFile keeps what the probe read of the bubblewrap and runsc
	// binaries across runs (probecache_linux.go); "" keeps it in this
	// kernel's memory only.
	ProbeFile string
	// EtcViewDir holds the box's /etc views (etcview_linux.go), a
	// private path of airlock's own state; "" binds /etc's files one by
	// one.
	EtcViewDir string
	// BoxWritable are the paths a box of this kernel may write now or an
	// earlier box was let write: neither cache is read or written there
	// (privfile refuses it), and no host program (bubblewrap, runsc,
	// airlock-box) is taken from there. Nil names none, and only the
	// working directory is passed over.
	BoxWritable []string
}

// Caches are one kernel's host caches: its CacheConfig and what the probe
// has read under it. A Spec carries the Caches of the kernel it was made
// for (Spec.Caches), so each plan checks them against its own kernel's
// list. The nil *Caches keeps nothing across runs: no /etc view, the
// probe's readings in memory (of this process, see memoryCaches).
type Caches struct {
	cfg   CacheConfig
	probe probeMemo
}

// probeMemo is what the probe read of the host's binaries under one
// Caches, loaded from its ProbeFile at most once.
type probeMemo struct {
	sync.Mutex
	loaded bool
	c      probeCacheFile
}

// probeCacheFile is the state the probe keeps across runs.
type probeCacheFile struct {
	Bwrap map[string]BwrapReport `json:"bwrap,omitempty"`
	Runsc map[string]RunscReport `json:"runsc,omitempty"`
}

// memoryCaches is where a nil *Caches keeps the probe's readings: what
// this process itself read of a binary, keyed by the file's identity, and
// nothing from any file. It holds no setting: a reading is the same
// whichever kernel asked.
var memoryCaches = &Caches{probe: probeMemo{loaded: true}}

// NewCaches returns the Caches of cfg; it keeps its own copy of the list,
// and adds it to the process's (everWritable).
func NewCaches(cfg CacheConfig) *Caches {
	cfg.BoxWritable = slices.Clone(cfg.BoxWritable)
	everWritable.add(cfg.BoxWritable)
	return &Caches{cfg: cfg}
}

// everWritable is every path a box of any kernel this process made Caches
// for may write or was let write. What the list guards is the host's, not
// one kernel's: the programs on PATH the host runs as itself, the
// airlock-box pinned once for the whole process, the cache directory a
// node's jobs share. A file a box of one kernel planted there (a
// bubblewrap in a PATH directory its policy let it write) is run by the
// host for every kernel alike, so each plan weighs the union, never its
// own kernel's list alone. Paths are never taken out: what a box planted
// stays after its kernel closes.
var everWritable writableSet

type writableSet struct {
	mu    sync.Mutex
	seen  map[string]bool
	paths []string
}

func (w *writableSet) add(paths []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range paths {
		if p == "" || w.seen[p] {
			continue
		}
		if w.seen == nil {
			w.seen = map[string]bool{}
		}
		w.seen[p] = true
		w.paths = append(w.paths, p)
	}
}

func (w *writableSet) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.paths)
}

// Config is what c was made with (a copy); the zero CacheConfig for nil.
func (c *Caches) Config() CacheConfig {
	if c == nil {
		return CacheConfig{}
	}
	cfg := c.cfg
	cfg.BoxWritable = slices.Clone(cfg.BoxWritable)
	return cfg
}

// boxWritable is what the host's programs and caches are weighed against
// for c's plans: c's list and every other kernel's of this process
// (everWritable), which holds c's; only the process's for nil.
func (c *Caches) boxWritable() []string {
	return everWritable.list()
}

// etcViewDir is c's view directory, "" for nil.
func (c *Caches) etcViewDir() string {
	if c == nil {
		return ""
	}
	return c.cfg.EtcViewDir
}

// memo is where c keeps the probe's readings.
func (c *Caches) memo() (*probeMemo, string) {
	if c == nil {
		return &memoryCaches.probe, ""
	}
	return &c.probe, c.cfg.ProbeFile
}

// Probe is the package's Probe with c's probe cache, and the host's
// programs weighed against c's list.
func (c *Caches) Probe() Report { return probe(c) }

// ProbeHost is the package's ProbeHost under c.
func (c *Caches) ProbeHost() Host { return Host{report: probe(c)} }

// ProbeHostFor is the package's ProbeHostFor under c.
func (c *Caches) ProbeHostFor(requested Tier) Host {
	switch requested {
	case TierAuto, Tier1:
		return Host{report: probeFor(Tier1, c)}
	}
	return c.ProbeHost()
}
