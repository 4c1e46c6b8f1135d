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

// NewCaches returns the Caches of cfg; it keeps its own copy of the list.
func NewCaches(cfg CacheConfig) *Caches {
	cfg.BoxWritable = slices.Clone(cfg.BoxWritable)
	return &Caches{cfg: cfg}
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

// boxWritable is c's list, nil for nil (not a copy: callers only read it).
func (c *Caches) boxWritable() []string {
	if c == nil {
		return nil
	}
	return c.cfg.BoxWritable
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
