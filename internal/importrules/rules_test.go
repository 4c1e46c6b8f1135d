package importrules

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

const module = "github.com/airlock-run/airlock"

// violation is one line DESIGN.md draws that a package crosses.
type violation struct {
	pkg  string
	imp  string // the airlock package imported, for an import the table forbids; else ""
	what string
}

func (v violation) String() string { return v.pkg + " " + v.what }

// frontEndBanned: the loop's work (confining, running, fitting, offloading,
// storing) is the mediator's; a front end only translates.
var frontEndBanned = []string{"runner", "sandbox", "fit", "offload", "files", "escape"}

// runnerImporters: runner is the only process starter, and only the kernel
// loop drives it, besides the escape matrix (which must run attacks in real
// boxes). The CLI's host check times a box through mediator.CheckBox.
var runnerImporters = []string{"mediator", "escape"}

// boxInitMay is all the in-box init may import (DESIGN.md: boxconf, seccomp,
// the Landlock rules and egress/forward), never the host planner.
var boxInitMay = []string{"sandbox/boxconf", "sandbox/landlock", "sandbox/lookpath", "sandbox/seccomp", "egress/forward"}

// tableRule is a check of the table itself against DESIGN.md.
type tableRule struct {
	name  string
	check func(t map[string]row) []string
}

// tableRules are DESIGN.md's lines, checked on the table.
var tableRules = []tableRule{
	{"every import is a placed package", func(tab map[string]row) (out []string) {
		for _, name := range sorted(tab) {
			for _, m := range tab[name].may {
				if _, ok := tab[m]; !ok || m == name {
					out = append(out, fmt.Sprintf("%s may import %s, which is not a row of the table (or is itself)", name, m))
				}
			}
		}
		return out
	}},
	{"imports go down the layers", func(tab map[string]row) (out []string) {
		for _, name := range sorted(tab) {
			r := tab[name]
			for _, m := range r.may {
				if mr, ok := tab[m]; ok && mr.layer > r.layer {
					out = append(out, fmt.Sprintf("%s (%s) may import %s (%s), a layer above it", name, r.layer, m, mr.layer))
				}
			}
		}
		return out
	}},
	{"no cycles", func(tab map[string]row) (out []string) {
		for _, name := range sorted(tab) {
			if slices.Contains(closure(tab, name), name) {
				out = append(out, name+" reaches itself through the table")
			}
		}
		return out
	}},
	{"only the mediator drives runner", func(tab map[string]row) []string {
		return onlyListedBy(tab, "runner", runnerImporters, "runner executes what the mediator decided; nothing else drives it")
	}},
	{"front ends translate", func(tab map[string]row) (out []string) {
		for _, name := range sorted(tab) {
			if tab[name].layer != frontEnds {
				continue
			}
			for _, m := range tab[name].may {
				if bannedForFrontEnd(m) {
					out = append(out, fmt.Sprintf("%s may import %s: a front end builds no box, runs, fits or stores nothing (the loop's work is the mediator's)", name, m))
				}
			}
		}
		return out
	}},
	{"the in-box init imports only what runs in the box", func(tab map[string]row) (out []string) {
		for _, m := range tab["sandbox/boxinit"].may {
			if !slices.Contains(boxInitMay, m) {
				out = append(out, "sandbox/boxinit may import "+m+": the in-box init imports only "+strings.Join(boxInitMay, ", ")+", never the host planner")
			}
		}
		if slices.Contains(closure(tab, "sandbox/boxinit"), "sandbox") {
			out = append(out, "sandbox/boxinit reaches sandbox, the host planner")
		}
		return append(out, onlyListedBy(tab, "sandbox/boxinit", nil, "only cmd/* dispatches the in-box mode")...)
	}},
	{"egress takes a check function", func(tab map[string]row) (out []string) {
		for _, name := range sorted(tab) {
			if (name == "egress" || strings.HasPrefix(name, "egress/")) && slices.Contains(closure(tab, name), "policy") {
				out = append(out, name+" reaches policy: egress takes a check function; it must not import policy")
			}
		}
		return out
	}},
	{"pure packages depend only on pure packages", func(tab map[string]row) (out []string) {
		for _, name := range sorted(tab) {
			if !tab[name].pure {
				continue
			}
			for _, d := range closure(tab, name) {
				if !tab[d].pure {
					out = append(out, name+" reaches "+d+", which is not pure")
				}
			}
		}
		return out
	}},
	{"only the mains import the CLI and the escape matrix", func(tab map[string]row) []string {
		return append(onlyListedBy(tab, "internal/cli", []string{"internal/fleetcli", "internal/mcpcli"}, "the CLI is wiring; no part imports it (but its fleet and MCP halves, internal/fleetcli and internal/mcpcli)"),
			onlyListedBy(tab, "escape", []string{"internal/cli", "internal/fleetcli"}, "the escape matrix is `airlock sandbox selftest` (and a node's attest rows)")...)
	}},
	{"nobody imports a main or a test package", func(tab map[string]row) (out []string) {
		for _, name := range sorted(tab) {
			for _, m := range tab[name].may {
				if l := tab[m].layer; l == mains || l == tests {
					out = append(out, fmt.Sprintf("%s may import %s: nothing imports a main or a package of tests", name, m))
				}
			}
			if tab[name].layer == tests && len(tab[name].may) > 0 {
				out = append(out, name+" may import airlock packages: a package of tests imports none, so every package's own tests can use it")
			}
		}
		return out
	}},
}

// onlyListedBy reports every row but those in allowed and the mains (cmd/*)
// that may import target.
func onlyListedBy(tab map[string]row, target string, allowed []string, why string) (out []string) {
	for _, name := range sorted(tab) {
		if slices.Contains(tab[name].may, target) && !slices.Contains(allowed, name) &&
			!strings.HasPrefix(name, "cmd/") {
			out = append(out, fmt.Sprintf("%s may import %s: %s", name, target, why))
		}
	}
	return out
}

// bannedForFrontEnd reports whether a front end may not import m.
func bannedForFrontEnd(m string) bool {
	for _, b := range frontEndBanned {
		if m == b || strings.HasPrefix(m, b+"/") {
			return true
		}
	}
	return false
}

// closure is every package name reaches through the table.
func closure(tab map[string]row, name string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		for _, m := range tab[n].may {
			if !seen[m] {
				seen[m] = true
				walk(m)
			}
		}
	}
	walk(name)
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func sorted[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
