package sandbox

import (
	"sort"

	"github.com/airlock-run/airlock/errs"
)

// Mechanism is one way of confining a command: it plans the boxes of one
// tier. The implementations are this package's own and are listed in the
// table mechanisms, one entry per tier this build runs (tier 0 none, tier
// 1 bubblewrap, tier 2 gvisor on Linux). Nothing
// is looked up by name or loaded from outside: the tiers are few and
// security-critical, and the unexported method keeps it that way.
type Mechanism interface {
	// Tier is the tier the mechanism gives.
	Tier() Tier
	// Name is what the evidence calls it (Box.Mechanism).
	Name() string
	// plan makes the box for spec, already validated; exe is the airlock
	// binary.
	plan(spec Spec, exe string) (*Box, error)
}

// none is tier 0: no box at all. The runner starts the command itself,
// in its working directory with the Spec's environment and nothing else.
type none struct{}

var _ Mechanism = none{}

func (none) Tier() Tier   { return Tier0 }
func (none) Name() string { return "none" }

func (none) plan(Spec, string) (*Box, error) {
	return &Box{Tier: Tier0, Mechanism: "none"}, nil
}

// mechanismFor is the mechanism of a concrete tier, or why this build or
// host has none. auto is refused: only Resolve reads it.
func mechanismFor(t Tier) (Mechanism, error) {
	if t == TierAuto {
		return nil, ErrAuto("sandbox")
	}
	if m, ok := mechanisms[t]; ok {
		return m, nil
	}
	if t >= Tier0 && t <= Tier2 {
		return nil, noMechanism(t)
	}
	return nil, errs.Invalidf("sandbox tier %d: want 0, 1 or 2", int(t))
}

// Tiers are the tiers this build can plan, lowest first: the keys of the
// mechanism table, so a part with a table of its own (the runner) can check
// that it has an entry for each.
func Tiers() []Tier {
	out := make([]Tier, 0, len(mechanisms))
	for t := range mechanisms {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
