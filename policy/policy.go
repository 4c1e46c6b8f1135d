// Package policy is airlock's policy engine: the policy document (YAML or
// JSON) with validation that names FILE:LINE:COL and the field, the built-in
// `workspace` profile, per-call narrowing, grants, and the Checker that turns
// a call — an argv, a shell string, a path, a host, a tool call, an
// environment name — into a Decision value.
//
// The package is pure: it does no I/O and starts nothing. What it needs to know
// about the machine (symlinks, the box's PATH) arrives through World as
// functions the caller supplies. Anything in airlock may import it except
// egress, which receives a check function instead.
package policy

import (
	"fmt"
	"time"
)

// Verdict is the outcome of a decision. The values are ordered by
// strictness, so the larger of two verdicts is the one that wins.
type Verdict uint8

const (
	// Allow lets the call go ahead.
	Allow Verdict = iota
	// Escalate stops the call until a person decides.
	Escalate
	// Deny refuses the call.
	Deny
)

var verdictNames = [...]string{"allow", "escalate", "deny"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", v)
}

// MarshalText writes the verdict as its name.
func (v Verdict) MarshalText() ([]byte, error) {
	if int(v) >= len(verdictNames) {
		return nil, fmt.Errorf("invalid verdict %d", v)
	}
	return []byte(verdictNames[v]), nil
}

// UnmarshalText reads a verdict name.
func (v *Verdict) UnmarshalText(b []byte) error {
	for i, n := range verdictNames {
		if string(b) == n {
			*v = Verdict(i)
			return nil
		}
	}
	return fmt.Errorf("unknown verdict %q (want allow, escalate or deny)", b)
}

// Category is the policy section a call belongs to. It travels in a
// structured denial so the agent knows what kind of thing was refused.
type Category string

// The categories, one per policy section that decides calls.
const (
	CatFS     Category = "fs"
	CatNet    Category = "net"
	CatShell  Category = "shell"
	CatEnv    Category = "env"
	CatTools  Category = "tools"
	CatLimits Category = "limits"
)

// Decision is the answer for one call.
type Decision struct {
	Verdict  Verdict  `json:"verdict"`
	Category Category `json:"category"`
	// Rule names the policy field that decided: "shell.args.git.deny[0]",
	// "fs.write[1]", "builtin.rm-root", "default". It is for the policy's
	// owner and the audit log, never for the agent.
	Rule string `json:"rule"`
	// Reason is one sentence the agent may read: what was refused and, where
	// useful, what to do instead. It never quotes the policy.
	Reason string `json:"reason"`
}

// Strictest returns the decision with the strictest verdict; among equals the
// first wins, so the rule reported is the first that reached that verdict.
// With no decisions it allows, with the rule "default".
func Strictest(ds ...Decision) Decision {
	if len(ds) == 0 {
		return Decision{Verdict: Allow, Rule: "default"}
	}
	best := ds[0]
	for _, d := range ds[1:] {
		if d.Verdict > best.Verdict {
			best = d
		}
	}
	return best
}

// Mode is how a run may touch the working directory.
type Mode uint8

const (
	// Observe reads and reports: nothing is writable. The default.
	Observe Mode = iota
	// Fix may write where fs.write allows.
	Fix
)

func (m Mode) String() string {
	if m == Fix {
		return "fix"
	}
	return "observe"
}

// Policy is a parsed, validated policy document. Nil slices and maps mean
// the section was not given: Parse fills the workspace defaults for a
// document, and Narrow lets the base policy's value stand. A Policy is not
// modified after it is built; methods return new ones.
type Policy struct {
	// Isolation is "auto" (confine with the best tier the host has),
	// "none" (no box at all; announced every time) or "gvisor" (tier 2
	// only: every box is a gVisor sandbox, and a host without gVisor runs
	// nothing rather than falling back).
	Isolation string   `json:"isolation"`
	FS        FS       `json:"fs"`
	Net       Net      `json:"net"`
	Shell     Shell    `json:"shell"`
	Env       EnvRules `json:"env"`
	// Tools decides tool calls by name ("tool" or "server.function"), with
	// "server.*" and "*" as fallbacks. Nil means every tool escalates.
	Tools      map[string]ToolRule `json:"tools,omitempty"`
	Limits     Limits              `json:"limits"`
	Escalation Escalation          `json:"escalation"`
	Sandbox    SandboxOpts         `json:"sandbox"`
	// Secrets bind credentials from the caller's environment to hosts:
	// the box holds placeholders (docs/secrets.md). Nil binds none.
	Secrets map[string]SecretBinding `json:"secrets,omitempty"`
	// Models turns on the model proxy for the models it allows
	// (docs/secrets.md). Nil: no model proxy.
	Models *Models `json:"models,omitempty"`
	// Source is the file the policy came from, "" for the built-in profile.
	Source string `json:"-"`

	// within is the policy this one was narrowed from: every decision must
	// also pass it, which is what makes narrowing unable to widen.
	within *Policy
	// grants lift escalations for exactly the calls a person approved.
	grants []Grant
}

// FS lists the paths a run may read and write. Entries are relative to the
// working directory, absolute, or start with "~/"; they may hold globs
// ("*", "?", "[a-z]", and "**" for any number of directories). A directory
// entry covers everything below it. Write entries are readable too, and are
// writable only in Fix mode.
type FS struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
	// Unprotect takes entries off the protected list (policy/protected):
	// each names an entry exactly; git's and airlock's own cannot be taken
	// off. The box may then write them, and the reader no longer asks.
	Unprotect []string `json:"unprotect,omitempty"`
	// UnattendedBuild says the repository is built by a tool nobody
	// watches (CI, a watcher): its build files (Makefile and the like) are
	// protected too.
	UnattendedBuild bool `json:"unattended_build,omitempty"`
}

// Net is the network allowlist, in netrule's entry syntax. An empty Allow
// means no network at all.
type Net struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny,omitempty"`
	// DNS is "allowlist" (names on the allowlist resolve) or "none" (only
	// IP literals may be reached).
	DNS string `json:"dns"`
	// Rules limit requests to the hosts of some Allow entries by method
	// and path; they are written as mappings in net.allow. Nil limits none.
	Rules []RequestRule `json:"-"`
}

// Shell decides programs and shell strings.
type Shell struct {
	// Allow lists the programs that may run, by bare name ("git") or exact
	// path ("./gradlew"). Nil means any program may run (the box is the
	// wall) except what the built-in command rules escalate; empty means
	// none.
	Allow []string `json:"allow"`
	// Args holds argument patterns per program (bare name).
	Args map[string]ArgRules `json:"args,omitempty"`
	// Raw says whether shell strings are accepted at all. Nil means yes.
	Raw *bool `json:"raw,omitempty"`
	// Spawn says whether a command may leave processes running in the
	// background (`cmd &`). False refuses them.
	Spawn bool `json:"spawn"`
	// RunWritten lets a tier-1 box execute files it wrote (beneath its
	// writable places) when Allow is given. False: with Allow given, the
	// kernel executes only the listed programs' files, so nothing the box
	// writes ever runs.
	RunWritten bool `json:"run_written,omitempty"`
}

// ArgRules are argument patterns for one program. See docs/policy.md for
// how a pattern matches: deny and escalate patterns match when the call
// contains what they name, allow patterns only when the call has exactly the
// shape they describe.
type ArgRules struct {
	Allow    []string `json:"allow,omitempty"`
	Deny     []string `json:"deny,omitempty"`
	Escalate []string `json:"escalate,omitempty"`
}

// EnvRules builds the box's environment, which starts empty.
type EnvRules struct {
	// Allow lists names (or globs such as "GITHUB_*") passed in from the
	// caller's environment. A glob never passes a loader or shell start-up
	// variable (LD_PRELOAD, BASH_ENV, …); those must be named exactly.
	Allow []string `json:"allow"`
	// Set holds fixed values; they win over the caller's.
	Set map[string]string `json:"set,omitempty"`
}

// Limits bound the whole process tree of a run. Zero means the default
// (see DefaultLimits) after Parse; Narrow reads zero as "not narrowed".
type Limits struct {
	Memory int64         `json:"memory"` // bytes
	CPU    float64       `json:"cpu"`    // cores; 1.5 = one and a half
	Wall   time.Duration `json:"wall"`
	Pids   int           `json:"pids"`
	// ModelTokens is a run's model token budget: the input and output
	// tokens the model proxy's answers report, summed over the run; the
	// next model request is refused once it is spent. 0 sets none.
	ModelTokens int64 `json:"model_tokens,omitempty"`
}

// Escalation configures what happens when a call needs a person.
type Escalation struct {
	// Timeout is how long to wait for an answer before denying.
	Timeout time.Duration `json:"timeout"`
}

// SandboxOpts are switches of the box itself.
type SandboxOpts struct {
	// Ptrace lets processes in the box trace each other (debuggers, strace).
	Ptrace bool `json:"ptrace"`
	// Home is what the box's HOME is: HomeFresh ("" or "fresh"), an empty
	// directory every run, or HomePersist ("persist"), a directory of
	// airlock's state kept per working directory, so shell history,
	// tool logins made inside the box and caches under HOME survive from
	// one run to the next. It is never inside a writable grant.
	Home string `json:"home,omitempty"`
}

// Values of SandboxOpts.Home.
const (
	HomeFresh   = "fresh"
	HomePersist = "persist"
)

// DefaultLimits are the limits of the workspace profile and of any policy
// that does not set its own: 4 GiB of memory, two cores, 1024 processes and
// 30 minutes of wall-clock time.
func DefaultLimits() Limits {
	return Limits{Memory: 4 << 30, CPU: 2, Wall: 30 * time.Minute, Pids: 1024}
}

// DefaultPolicyFile is the policy airlock reads from the working directory
// when none is named.
const DefaultPolicyFile = "airlock.yaml"

// DefaultEscalationTimeout is how long an escalation waits for a person
// before it is denied.
const DefaultEscalationTimeout = 30 * time.Second

// Workspace returns the built-in profile used when there is no policy file:
// the working directory readable (and writable in Fix mode), the system
// read-only, no network, an environment built from nothing, any program
// except what the built-in command rules escalate, default limits.
func Workspace() *Policy {
	return &Policy{
		Isolation:  "auto",
		FS:         FS{Read: []string{"."}, Write: []string{"."}},
		Net:        Net{Allow: []string{}, DNS: "allowlist"},
		Env:        EnvRules{Allow: []string{}},
		Limits:     DefaultLimits(),
		Escalation: Escalation{Timeout: DefaultEscalationTimeout},
	}
}

// RawAllowed reports whether shell strings are accepted.
func (s Shell) RawAllowed() bool { return s.Raw == nil || *s.Raw }

// Within returns the policy p was narrowed from, nil if it was not.
func (p *Policy) Within() *Policy { return p.within }

// Grants returns the grants added with WithGrants.
func (p *Policy) Grants() []Grant { return append([]Grant(nil), p.grants...) }
