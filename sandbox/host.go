package sandbox

import (
	"github.com/airlock-run/airlock/errs"
)

// Host is what this host can do, probed once. A kernel probes when it
// starts (ProbeHost), keeps the value, and resolves every tier it is asked
// for against it (Resolve), so the tier is chosen once per kernel rather
// than probed again on every call. (Plan still checks, per box, what that
// box needs of bubblewrap and the kernel.)
//
// It is a value the caller holds rather than a cache inside this package:
// `airlock sandbox check` and a long-lived daemon want a fresh probe when
// they ask for one, and tests build the host they need (HostFrom) without
// depending on which test probed first. Nothing here needs a global.
//
// The zero Host gives tier 0 only, so an auto request against it is refused.
type Host struct {
	report Report
}

// runscMissing says no runsc was found where airlock takes host programs
// from: a runsc in a directory a box could have written (the working
// directory and beneath it, a box-writable path, one writable by others)
// is passed over, never run.
const runscMissing = "gVisor (runsc) is not installed on this host (a runsc in the working directory, or in a directory a box or another user may write, is not used)"

// ProbeHost probes this host (see Probe) and returns the result to keep.
// It keeps no cache across runs; a kernel probes under its own Caches
// (Caches.ProbeHost).
func ProbeHost() Host { return (*Caches)(nil).ProbeHost() }

// ProbeHostFor probes what Resolve needs to answer requested and returns
// the result to keep: for auto and tier 1, only what decides tier 1
// (bubblewrap, user namespaces, seccomp), whose Report holds those parts
// and their findings alone; for tier 2 (and anything else), the whole
// probe, as ProbeHost. Resolve(requested, ProbeHostFor(requested)) answers
// as Resolve(requested, ProbeHost()) does.
func ProbeHostFor(requested Tier) Host { return (*Caches)(nil).ProbeHostFor(requested) }

// HostFrom is the Host a report describes: a report read elsewhere (a
// node's attestation), or one a test builds.
func HostFrom(r Report) Host { return Host{report: r} }

// Best is the highest tier the host gives.
func (h Host) Best() Tier { return h.report.Best }

// Report is the probe the Host was made from.
func (h Host) Report() Report { return h.report }

// errNoConfinement is the refusal of auto on a host that gives tier 0
// only: an unconfined run is asked for by name or not at all.
const errNoConfinement = "sandbox: this host gives no confinement (run `airlock sandbox check` for the fix, or --sandbox off to run unconfined)"

// Resolve turns the tier a caller asked for into the concrete tier to run
// at on host h, or refuses. It is the one place auto is read:
//
//   - auto is the best tier the host gives, refused when that is tier 0
//     (errs.Unavailable);
//   - 0 is tier 0, asked for by name (--sandbox off);
//   - 1 is refused on a host that cannot give it (errs.Unavailable, naming
//     what is missing);
//   - 2 is refused while this build has no mechanism for it (errs.Unavailable,
//     naming the fix), and once it has one, on a host that cannot give it;
//   - anything else is errs.Invalid.
//
// Resolve never falls back: a tier the host cannot give is an error.
func Resolve(requested Tier, h Host) (Tier, error) {
	switch requested {
	case TierAuto:
		if h.Best() <= Tier0 {
			return 0, errs.Unavailablef(errNoConfinement)
		}
		// gVisor is asked for by name (--sandbox 2, isolation: gvisor):
		// auto stays at tier 1 where the host gives more.
		return Resolve(min(h.Best(), Tier1), h)
	case Tier0:
		return Tier0, nil
	case Tier1, Tier2:
		if _, ok := mechanisms[requested]; !ok {
			if requested == Tier2 {
				return 0, tier2Refusal(h.report.GVisor)
			}
			return 0, noMechanism(requested)
		}
		if requested == Tier2 {
			return resolveTier2(h)
		}
		if h.Best() < requested {
			why := h.report.Why
			if why == "" {
				why = "the probe found nothing"
			}
			return 0, errs.Unavailablef("sandbox tier %s: this host cannot give it: %s (run `airlock sandbox check` for the fix, or --sandbox off to run unconfined)", requested, why)
		}
		return requested, nil
	}
	return 0, errs.Invalidf("sandbox tier %d: want auto, 0, 1 or 2", int(requested))
}

// resolveTier2 gives tier 2 where runsc passed its checks (and, when one
// ran, its self-test), and tier 1 works too: a gVisor box is tier 1's
// promise kept by another kernel, never a way round a host without it.
func resolveTier2(h Host) (Tier, error) {
	gv := h.report.Runsc
	if !gv.Usable {
		why, fix := gv.Why, gv.Fix
		if why == "" {
			why, fix = runscMissing, gvisorInstall
		}
		return 0, errs.Unavailablef("sandbox tier 2: %s (%s; or use --sandbox 1)", why, fix)
	}
	return Tier2, nil
}

// ErrAuto is the refusal of auto by a part that needs a concrete tier (the
// runner, the planner); who names the part. Only the kernel, through
// Resolve, turns auto into a tier, so no library path runs tier 0 because
// nobody chose.
func ErrAuto(who string) error {
	return errs.Invalidf("%s: tier auto must be resolved by the kernel", who)
}

// tier2Refusal is why tier 2 is refused, with the fix; gvisor is the path
// of runsc, "" when it is not installed.
func tier2Refusal(gvisor string) error {
	if gvisor != "" {
		return errs.Unavailablef("sandbox tier 2: gVisor is installed at %s but this build of airlock does not run tier 2 (use --sandbox 1 or auto)", gvisor)
	}
	return errs.Unavailablef("sandbox tier 2: gVisor (runsc) is not installed on this host (install it from https://gvisor.dev/docs/user_guide/install/, or use --sandbox 1 or auto)")
}
