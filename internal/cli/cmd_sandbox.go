package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/sandbox"
)

func sandboxCmd() *Command {
	return &Command{Name: "sandbox", Usage: "COMMAND", Short: "what confinement this host gives",
		Sub: []*Command{sandboxCheckCmd(), sandboxSelftestCmd()}}
}

// checkReport is what `airlock sandbox check --json` prints: the host probe
// plus the result of starting a real box.
type checkReport struct {
	sandbox.Report
	BoxStart struct {
		OK     bool    `json:"ok"`
		Millis float64 `json:"ms"`
		Error  string  `json:"error,omitempty"`
	} `json:"box_start"`
	Credentials *credentialsView `json:"credentials,omitempty"`
}

// credentialsView is what the policy in force does with credentials:
// which variables are phantom and where each may go, which model
// providers the model proxy opens. Names and hosts only, never a value.
type credentialsView struct {
	Policy  string       `json:"policy"`
	Error   string       `json:"error,omitempty"`
	Secrets []secretView `json:"secrets"`
	Models  *modelsView  `json:"models,omitempty"`
}

type secretView struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts"`
	Form  string   `json:"form"`
	// Set is whether airlock's environment holds the value: unset, the
	// box gets neither it nor a placeholder.
	Set bool `json:"set"`
	// KeyID names the phantom access key ID of a SigV4 binding.
	KeyID string `json:"key_id,omitempty"`
}

type modelsView struct {
	Allow       []string          `json:"allow"`
	Providers   map[string]string `json:"providers"`
	ModelTokens int64             `json:"model_tokens,omitempty"`
}

// credentials describes what the policy file (or, without one, the policy
// run would use here) does with credentials.
func credentials(env *Env, file string) *credentialsView {
	v := &credentialsView{Secrets: []secretView{}}
	p, source, _, err := loadPolicyAt(env, file, "", "observe")
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Policy = source
	if source == "" {
		v.Policy = "workspace (built-in)"
	}
	names := make([]string, 0, len(p.Secrets))
	for n := range p.Secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := p.Secrets[n]
		sv := secretView{Name: n, Hosts: b.Hosts, Form: b.Form(), Set: env.Getenv(n) != "", KeyID: b.SigV4}
		if b.SigV4 != "" {
			sv.Set = sv.Set && env.Getenv(b.SigV4) != ""
		}
		v.Secrets = append(v.Secrets, sv)
	}
	if p.HasModels() {
		provs, err := mediator.ModelEndpoints(env.Environ)
		if err != nil {
			v.Error = err.Error()
		}
		v.Models = &modelsView{Allow: p.Models.Allow, Providers: provs, ModelTokens: p.Limits.ModelTokens}
	}
	return v
}

func printCredentials(w io.Writer, v *credentialsView) {
	if v.Error != "" && v.Policy == "" {
		fmt.Fprintf(w, "Credentials: the policy could not be read: %s\n", v.Error)
		return
	}
	fmt.Fprintf(w, "Credentials (policy %s):\n", v.Policy)
	if len(v.Secrets) == 0 {
		fmt.Fprintf(w, "  no phantom secrets: a variable env.allow passes enters the box in clear\n")
	}
	for _, s := range v.Secrets {
		state := "phantom"
		if !s.Set {
			state = "not set here (the box gets nothing)"
		}
		name := s.Name
		if s.KeyID != "" {
			name += " + " + s.KeyID
		}
		fmt.Fprintf(w, "  %s: %s, to %s only, as %s\n", name, state, strings.Join(s.Hosts, ", "), s.Form)
	}
	if m := v.Models; m != nil {
		var provs []string
		for name, at := range m.Providers {
			provs = append(provs, name+" ("+at+")")
		}
		sort.Strings(provs)
		if len(provs) == 0 {
			provs = []string{"none: no provider key (OPENAI_API_KEY, ANTHROPIC_API_KEY) in airlock's environment"}
		}
		budget := "no token budget"
		if m.ModelTokens > 0 {
			budget = fmt.Sprintf("%d tokens a run", m.ModelTokens)
		}
		fmt.Fprintf(w, "  model proxy: models %s; providers %s; %s\n", strings.Join(m.Allow, ", "), strings.Join(provs, ", "), budget)
		if v.Error != "" {
			fmt.Fprintf(w, "  model proxy: %s\n", v.Error)
		}
	}
}

func sandboxCheckCmd() *Command {
	const usage = "[--json] [--policy FILE]"
	const long = `Reports the sandbox tier this host gives and why: bubblewrap's path,
version and options, user namespaces (including Ubuntu's AppArmor
restriction), seccomp, the cgroup hierarchy and its controllers, whether
protected paths are enforced, Yama's ptrace scope, gVisor and KVM. It starts
one real box running "true" to prove tier 1 works here and, where runsc
passes its checks (static, recent), a gVisor box that lists and stats its
root: tier 2 is reported only then. Every finding
carries its fix. Exits 0 when the best tier works, 125 when tier 1 was
expected but a box could not be started.

It also lists what the policy in force here (or --policy FILE) does with
credentials: each phantom secret, the hosts it may go to and how it is
written there, and the model proxy's providers and budget — names and
hosts only, never a value.`
	return &Command{Name: "check", Usage: usage, Short: "report the sandbox tier this host gives, with fixes", Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			fs := NewFlags(env, "airlock sandbox check", usage, long)
			asJSON := fs.Bool("json", false, "print the report as JSON")
			policyFile := fs.String("policy", "", "the policy whose credentials to list (default: the one run would use here)")
			if err := ParseFlags(fs, args); err != nil {
				return err
			}
			if fs.NArg() > 0 {
				return usagef("unexpected argument %q", fs.Arg(0))
			}
			rep := checkReport{Report: sandbox.Probe()}
			var startErr error
			if rep.Best >= sandbox.Tier1 {
				took, err := mediator.CheckBox(ctx, env.Exe)
				rep.BoxStart.Millis = float64(took.Microseconds()) / 1000
				if err != nil {
					startErr = err
					rep.BoxStart.Error = err.Error()
					rep.Findings = append(rep.Findings, sandbox.Finding{Severity: sandbox.SevError, Topic: "box start",
						Text: "every check passed but a real box failed to start: " + err.Error(),
						Fix:  "Run airlock outside a container that forbids user namespaces (docker run --security-opt seccomp=unconfined, or a privileged pod), or fix what the message names."})
					rep.Best = sandbox.Tier0
					rep.Protected = false
					rep.Why = "a tier-1 box could not be started here"
				} else {
					rep.BoxStart.OK = true
				}
			}
			if rep.Best >= sandbox.Tier1 && rep.Runsc.Usable {
				_, err := mediator.CheckGVisorBox(ctx, env.Exe)
				rep.SetGVisorSelfTest(err)
			}
			rep.Credentials = credentials(env, *policyFile)
			if *asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printCheck(env.Stdout, rep)
				printCredentials(env.Stdout, rep.Credentials)
			}
			if startErr != nil {
				return &ExitError{Code: 125}
			}
			return nil
		}}
}

// gvisorState says in a few words whether tier 2 runs here.
func gvisorState(gv sandbox.RunscReport) string {
	switch {
	case gv.Usable && gv.SelfTest == "ok":
		return "tier 2 works: a gVisor box passed its self-test on " + gv.Platform
	case gv.Usable:
		return "tier 2 not self-tested"
	}
	return "tier 2 refused: " + gv.Why
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func printCheck(w io.Writer, rep checkReport) {
	r := rep.Report
	fmt.Fprintf(w, "Sandbox tier: %d (%s)\n", int(r.Best), r.Why)
	if r.Best >= sandbox.Tier1 || rep.BoxStart.Error != "" {
		if rep.BoxStart.OK {
			fmt.Fprintf(w, "Box start: ok (a tier-1 box ran true in %s)\n", time.Duration(rep.BoxStart.Millis*float64(time.Millisecond)).Round(100*time.Microsecond))
		} else {
			fmt.Fprintf(w, "Box start: failed (%s)\n", rep.BoxStart.Error)
		}
	}
	bw := r.Bubblewrap
	if bw.Path == "" {
		fmt.Fprintf(w, "Bubblewrap: not found\n")
	} else {
		fmt.Fprintf(w, "Bubblewrap: %s %s (--ro-bind-fd %s, --disable-userns %s, --clearenv %s, setuid %s)\n",
			bw.Path, orUnknown(bw.Version), yesNo(bw.BindFD), yesNo(bw.DisableUserns), yesNo(bw.ClearEnv), yesNo(bw.Setuid))
	}
	u := r.UserNS
	us := "available"
	if !u.Available {
		us = "unavailable"
	}
	extra := []string{fmt.Sprintf("user.max_user_namespaces=%d", u.MaxUserNamespaces)}
	if u.UnprivilegedClone != nil {
		extra = append(extra, fmt.Sprintf("kernel.unprivileged_userns_clone=%d", *u.UnprivilegedClone))
	}
	if u.AppArmorRestrict != nil {
		extra = append(extra, fmt.Sprintf("kernel.apparmor_restrict_unprivileged_userns=%d", *u.AppArmorRestrict))
	} else {
		extra = append(extra, "no AppArmor user-namespace restriction")
	}
	fmt.Fprintf(w, "User namespaces: %s (%s)\n", us, strings.Join(extra, ", "))
	if r.Seccomp.Available {
		fmt.Fprintf(w, "Seccomp: available (actions: %s)\n", strings.Join(r.Seccomp.Actions, " "))
	} else {
		fmt.Fprintf(w, "Seccomp: unavailable\n")
	}
	switch cg := r.Cgroup; cg.Version {
	case 0:
		fmt.Fprintf(w, "Cgroups: none usable\n")
	default:
		fmt.Fprintf(w, "Cgroups: v%d at %s, controllers %s, writable %s\n", cg.Version, cg.Root, strings.Join(cg.Controllers, " "), yesNo(cg.Writable))
	}
	fmt.Fprintf(w, "Landlock: ABI %d\n", r.Landlock.ABI)
	if r.Yama.Present {
		fmt.Fprintf(w, "Yama ptrace_scope: %d\n", r.Yama.PtraceScope)
	} else {
		fmt.Fprintf(w, "Yama: absent (sandbox.ptrace is refused)\n")
	}
	onOff := "off"
	if r.Protected {
		onOff = "on"
	}
	fmt.Fprintf(w, "Protected paths: %s\n", onOff)
	if r.GVisor != "" {
		fmt.Fprintf(w, "gVisor: %s %s (%s)\n", r.GVisor, orUnknown(r.Runsc.Version), gvisorState(r.Runsc))
	} else {
		fmt.Fprintf(w, "gVisor: not found (tier 2 unavailable)\n")
	}
	fmt.Fprintf(w, "KVM: %s\n", map[bool]string{true: "present", false: "absent"}[r.KVM])
	if len(r.Findings) > 0 {
		fmt.Fprintf(w, "\nFindings:\n")
		for _, f := range r.Findings {
			fmt.Fprintf(w, "  [%s] %s: %s\n        fix: %s\n", f.Severity, f.Topic, f.Text, f.Fix)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "(version unknown)"
	}
	return s
}
