package mediator

import (
	"sync"

	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// resolveOnce turns the requested tier into the concrete one, probing the
// host at most once for the kernel's life (sandbox.Resolve: auto is the
// best the host gives, and a host that gives no confinement fails every
// call that needs a box rather than running it at tier 0), under the
// kernel's caches.
func resolveOnce(requested sandbox.Tier, caches *sandbox.Caches) func() (sandbox.Tier, error) {
	return sync.OnceValues(func() (sandbox.Tier, error) {
		if requested == sandbox.Tier0 {
			return requested, nil // no probe needed: the caller asked for none
		}
		// Only what the request's answer depends on is probed (for auto
		// and tier 1, tier 1's needs; Plan checks each box's own).
		return sandbox.Resolve(requested, caches.ProbeHostFor(requested))
	})
}

// gvisorOnce is tier 2 for a policy with `isolation: gvisor`, resolved
// against one probe of the host for the kernel's life, under its caches
// (runsc is never taken from where its boxes may write or were let write).
func gvisorOnce(caches *sandbox.Caches) func() (sandbox.Tier, error) {
	return sync.OnceValues(func() (sandbox.Tier, error) {
		return sandbox.Resolve(sandbox.Tier2, caches.ProbeHost())
	})
}

// Settle returns once the work New started beside the front end's own
// start (the host's probe, which may write the probe cache) has ended, so
// that nothing of the kernel runs on after its front end closed it.
func (k *Kernel) Settle() { k.tier() }

// tierFor is the tier a call under p runs at: `isolation: none` is tier 0,
// announced every time; otherwise the kernel's resolved tier.
func (k *Kernel) tierFor(p *policy.Policy, what string) (sandbox.Tier, error) {
	t, err := k.tier()
	if p.Isolation == "none" {
		t, err = sandbox.Tier0, nil
	}
	if p.Isolation == "gvisor" {
		t, err = k.gvisorTier() // tier 2 or a refusal naming the fix, never a fallback
	}
	if err != nil {
		return t, err
	}
	if t == sandbox.Tier0 {
		k.run.warn("WARNING: " + what + " runs UNCONFINED (tier 0): it has your files, network and rights; only its working directory and environment are its own")
	}
	return t, nil
}
