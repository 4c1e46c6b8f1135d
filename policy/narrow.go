package policy

import (
	"maps"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-run/airlock/netrule"
)

// Narrow returns the policy for one call that carries its own narrower
// policy n: the intersection of p and n. Sections n does not give (nil
// lists, zero limits) keep p's values. The result remembers p, and every
// decision of its Checker must also pass p's, so no n — however written —
// makes any decision more permissive than p's. Its lists are also
// intersected where that can be done entry by entry, so a sandbox plan built
// from them never exceeds p either.
func (p *Policy) Narrow(n *Policy) *Policy {
	if n == nil {
		return p
	}
	// p's grants go along: a person's "allow always" holds for the exact
	// call it names whatever a call narrows.
	q := &Policy{Source: p.Source, within: p, grants: p.grants}

	// Isolation only ever gets stronger: gvisor from either side stays
	// gvisor, and none needs both.
	q.Isolation = "auto"
	switch {
	case p.Isolation == "gvisor" || n.Isolation == "gvisor":
		q.Isolation = "gvisor"
	case p.Isolation == "none" && (n.Isolation == "none" || n.Isolation == ""):
		q.Isolation = "none"
	}

	q.FS.Read = intersectPaths(p.FS.Read, n.FS.Read)
	q.FS.Write = intersectPaths(p.FS.Write, n.FS.Write)
	// Taking an entry off the protected list widens what a box may write:
	// only entries both take off stay off. Unattended builds protect more:
	// either asks for it.
	q.FS.Unprotect = slices.Clone(p.FS.Unprotect)
	if n.FS.Unprotect != nil {
		q.FS.Unprotect = intersectStrings(p.FS.Unprotect, n.FS.Unprotect)
	}
	q.FS.UnattendedBuild = p.FS.UnattendedBuild || n.FS.UnattendedBuild
	if n.FS.Read != nil && n.FS.Write == nil {
		// Write entries are readable too; a call that narrows reads
		// narrows writes with them.
		q.FS.Write = intersectPaths(q.FS.Write, n.FS.Read)
	}

	// The egress proxy is built from this list, so it is intersected entry
	// by entry like fs: an entry of n that an entry of p covers, or an
	// entry of p that an entry of n covers.
	q.Net.Allow = intersectNet(p.Net.Allow, n.Net.Allow)
	q.Net.Deny = union(p.Net.Deny, n.Net.Deny)
	q.Net.DNS = p.Net.DNS
	// n's request rules are a layer of their own (RequestRuleLayers): p's
	// hold through the chain.
	q.Net.Rules = slices.Clone(n.Net.Rules)
	q.Secrets = narrowSecrets(p.Secrets, n.Secrets)
	// Both lists hold through the chain (ModelAllowed); the flat copy
	// keeps the narrower one's, and none at all unless p has a model proxy.
	if p.Models != nil {
		q.Models = p.Models
		if n.Models != nil {
			q.Models = n.Models
		}
	}
	if n.Net.DNS == "none" {
		q.Net.DNS = "none"
	}

	switch {
	case n.Shell.Allow == nil:
		q.Shell.Allow = slices.Clone(p.Shell.Allow)
	case p.Shell.Allow == nil:
		q.Shell.Allow = slices.Clone(n.Shell.Allow)
	default:
		q.Shell.Allow = intersectStrings(p.Shell.Allow, n.Shell.Allow)
	}
	if p.Shell.Args != nil || n.Shell.Args != nil {
		q.Shell.Args = map[string]ArgRules{}
		for _, prog := range union(sortedKeys(p.Shell.Args), sortedKeys(n.Shell.Args)) {
			a, b := p.Shell.Args[prog], n.Shell.Args[prog]
			r := ArgRules{Deny: union(a.Deny, b.Deny), Escalate: union(a.Escalate, b.Escalate)}
			// Both allow lists hold through the chain; the flat copy keeps
			// the narrower one's.
			r.Allow = slices.Clone(a.Allow)
			if b.Allow != nil {
				r.Allow = slices.Clone(b.Allow)
			}
			q.Shell.Args[prog] = r
		}
	}
	if !p.Shell.RawAllowed() || !n.Shell.RawAllowed() {
		f := false
		q.Shell.Raw = &f
	}
	q.Shell.Spawn = p.Shell.Spawn && n.Shell.Spawn
	q.Shell.RunWritten = p.Shell.RunWritten && n.Shell.RunWritten

	q.Env.Allow = slices.Clone(p.Env.Allow)
	if n.Env.Allow != nil {
		q.Env.Allow = slices.Clone(n.Env.Allow) // p's list holds through the chain
	}
	// Fixed values are the base policy's: a call cannot inject a variable.
	if p.Env.Set != nil {
		q.Env.Set = maps.Clone(p.Env.Set)
	}

	if p.Tools != nil || n.Tools != nil {
		q.Tools = map[string]ToolRule{}
		maps.Copy(q.Tools, p.Tools)
		maps.Copy(q.Tools, n.Tools) // the chain keeps p's verdicts in force
	}

	q.Limits = Limits{
		Memory: minPos(p.Limits.Memory, n.Limits.Memory),
		CPU:    minPos(p.Limits.CPU, n.Limits.CPU),
		Wall:   minPos(p.Limits.Wall, n.Limits.Wall),
		Pids:   minPos(p.Limits.Pids, n.Limits.Pids),

		ModelTokens: minPos(p.Limits.ModelTokens, n.Limits.ModelTokens),
	}
	q.Escalation.Timeout = minPos(p.Escalation.Timeout, n.Escalation.Timeout)
	q.Sandbox.Ptrace = p.Sandbox.Ptrace && n.Sandbox.Ptrace
	// A home kept between runs carries state from one run into the next:
	// narrowing may make it fresh, never keep one the base does not.
	q.Sandbox.Home = p.Sandbox.Home
	if n.Sandbox.Home == HomeFresh {
		q.Sandbox.Home = HomeFresh
	}
	return q
}

// minPos is the smaller of two values where zero means "not set".
func minPos[T ~int | ~int64 | ~float64](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	case b < a:
		return b
	}
	return a
}

func union(a, b []string) []string {
	if a == nil && b == nil {
		return nil
	}
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// intersectStrings keeps b's entries that a also has (nil b: a's).
func intersectStrings(a, b []string) []string {
	if b == nil {
		return slices.Clone(a)
	}
	out := []string{}
	for _, s := range b {
		if slices.Contains(a, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// intersectPaths intersects two fs lists entry by entry: an entry of b
// inside an entry of a is kept, and so is an entry of a inside a
// (literal) entry of b. Entries that cannot be compared without the world
// (a relative entry against an absolute one) are dropped: the result may
// allow less than the true intersection, never more.
func intersectPaths(a, b []string) []string {
	if b == nil {
		return slices.Clone(a)
	}
	out := []string{}
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, e := range b {
		for _, x := range a {
			switch {
			case entryCovers(x, e):
				add(e)
			case entryCovers(e, x):
				add(x)
			}
		}
	}
	return out
}

// entryCovers reports whether fs entry x covers everything entry e names,
// compared lexically.
func entryCovers(x, e string) bool {
	kx, lx := entryKind(x)
	ke, le := entryKind(e)
	if kx != ke {
		return false
	}
	if hasMeta(lx) {
		return lx == le
	}
	// The part of e before its first glob segment must lie in x.
	lit := le
	if hasMeta(le) {
		segs := strings.Split(le, "/")
		k := 0
		for k < len(segs) && !hasMeta(segs[k]) {
			k++
		}
		lit = strings.Join(segs[:k], "/")
		if lit == "" {
			lit = "/"
			if kx != '/' {
				lit = "."
			}
		}
	}
	if kx == '.' {
		if lit == ".." || strings.HasPrefix(lit, "../") {
			return false
		}
		if lx == "." {
			return true
		}
		return lit == lx || strings.HasPrefix(lit, lx+"/")
	}
	return underDir(lx, lit)
}

// entryKind classifies an entry as absolute ('/'), home ('~', returned as an
// absolute-looking path below "/~") or relative ('.'), cleaned.
func entryKind(s string) (byte, string) {
	switch {
	case strings.HasPrefix(s, "/"):
		return '/', path.Clean(s)
	case s == "~" || strings.HasPrefix(s, "~/"):
		return '~', path.Clean("/" + s)
	}
	return '.', path.Clean(s)
}

// intersectNet intersects two net.allow lists entry by entry (nil b: a's).
// Entries that cannot be compared are dropped, so the result never admits a
// connection that a does not.
func intersectNet(a, b []string) []string {
	if b == nil {
		return slices.Clone(a)
	}
	out := []string{}
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, e := range b {
		pe, ok := parseNetEntry(e)
		if !ok {
			continue
		}
		for _, x := range a {
			px, ok := parseNetEntry(x)
			if !ok {
				continue
			}
			switch {
			case px.covers(pe):
				add(e)
			case pe.covers(px):
				add(x)
			}
		}
	}
	return out
}

// netEntry is a net.allow entry as far as intersecting needs it, read the
// way netrule reads it.
type netEntry struct {
	kind    byte // 'h' host, 'w' wildcard (strict subdomains of name), 'p' address prefix
	name    string
	prefix  netip.Prefix
	anyPort bool
	ports   []int
}

func parseNetEntry(s string) (netEntry, bool) {
	var e netEntry
	host, port := s, ""
	if p, err := netip.ParsePrefix(s); err == nil {
		e.kind, e.prefix = 'p', p.Masked()
	} else if a, err := netip.ParseAddr(s); err == nil {
		e.kind, e.prefix = 'p', netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
	} else {
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i+1:]
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if p, err := netip.ParsePrefix(host); err == nil {
			e.kind, e.prefix = 'p', p.Masked()
		} else if a, err := netip.ParseAddr(host); err == nil {
			e.kind, e.prefix = 'p', netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		} else {
			e.kind = 'h'
			if rest, ok := strings.CutPrefix(host, "*."); ok {
				e.kind, host = 'w', rest
			}
			c, err := netrule.Canonical(host)
			if err != nil {
				return e, false
			}
			if a, err := netip.ParseAddr(c); err == nil {
				if e.kind == 'w' {
					return e, false
				}
				e.kind, e.prefix = 'p', netip.PrefixFrom(a, a.BitLen())
			}
			e.name = c
		}
	}
	switch port {
	case "":
		e.ports = []int{80, 443}
	case "*":
		e.anyPort = true
	default:
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return e, false
		}
		e.ports = []int{n}
	}
	return e, true
}

// covers reports whether every connection e admits, x admits too.
func (x netEntry) covers(e netEntry) bool {
	if !x.anyPort {
		if e.anyPort {
			return false
		}
		for _, p := range e.ports {
			if !slices.Contains(x.ports, p) {
				return false
			}
		}
	}
	switch x.kind {
	case 'h':
		return e.kind == 'h' && e.name == x.name
	case 'w':
		return (e.kind == 'h' || e.kind == 'w') && (e.kind == 'w' && e.name == x.name || strings.HasSuffix(e.name, "."+x.name))
	case 'p':
		return e.kind == 'p' && x.prefix.Addr().Is4() == e.prefix.Addr().Is4() &&
			x.prefix.Bits() <= e.prefix.Bits() && x.prefix.Contains(e.prefix.Addr())
	}
	return false
}
