//go:build !linux

package sandbox

import (
	"io"
	"os"
	"runtime"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// Box is a planned box; only tier 0 exists off Linux.
type Box struct {
	Tier               Tier
	Path               string
	Argv               []string
	ExtraFiles         []*os.File
	Mechanism, Version string
	Namespaces         []string
	Protected, Seccomp bool
	Notes              []string
	Stubs              []Stub
}

// Stub is a placeholder made for a protected path that did not exist.
type Stub struct {
	Path     string `json:"path"`
	Dev, Ino uint64
	Lock     string `json:"lock,omitempty"`
}

// InitArg is the hidden argument of the in-box init.
const InitArg = "__airlock-box-init"

// GuardArg selects the cleanup guard.
const GuardArg = "guard"

func (b *Box) AddFile(f *os.File) int    { return -1 }
func (b *Box) SetStderr(int)             {}
func (b *Box) Started()                  {}
func (b *Box) SendConfig([]string) error { return nil }
func (b *Box) ReadStatus() (boxconf.Status, error) {
	return boxconf.Status{}, errs.Unavailablef("no box")
}
func (b *Box) Close() error          { return nil }
func RemoveStubs([]Stub) error       { return nil }
func Guard(io.Reader) int            { return 0 }
func KillCgroup(version, dir string) {}

// Probe reports that only tier 0 exists on this operating system.
func Probe() Report {
	r := Report{OS: runtime.GOOS, Best: Tier0, Why: "tier 1 needs Linux (bubblewrap, namespaces, seccomp)"}
	r.Findings = append(r.Findings, Finding{Severity: SevError, Topic: "platform", Text: "airlock's sandbox needs Linux; on " + runtime.GOOS + " commands run at tier 0.", Fix: "Run airlock on Linux for tier 1."})
	return r
}

// probe is Probe: off Linux no probe reads binaries, so there is nothing
// to cache.
func probe(*Caches) Report { return Probe() }

// probeFor is Probe: off Linux there is nothing to narrow.
func probeFor(Tier, *Caches) Report { return Probe() }

// mechanisms are the tiers this build runs off Linux: tier 0 only.
var mechanisms = map[Tier]Mechanism{Tier0: none{}}

func noMechanism(t Tier) error {
	return errs.Unavailablef("sandbox tier %s: needs Linux; this is %s", t, runtime.GOOS)
}

// Plan gives tier 0 and refuses every other tier.
func Plan(spec Spec, tier Tier, exe string) (*Box, error) {
	m, err := mechanismFor(tier)
	if err != nil {
		return nil, err
	}
	return m.plan(spec, exe)
}

// RemoveEtcCache removes dir.
func RemoveEtcCache(dir string) { os.RemoveAll(dir) }
