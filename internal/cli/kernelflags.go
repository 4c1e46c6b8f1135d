package cli

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"github.com/airlock-run/airlock/internal/wiring"
	"github.com/airlock-run/airlock/sandbox"
)

// kernelFlags are the flags of every command that builds the kernel (run,
// mcp serve, mcp wrap), so all of them read the policy, the mode, the tier
// and the audit log the same way.
type kernelFlags struct {
	policy, workdir, mode, sandbox, audit *string
	// report is the command's --report flag and store its file store's
	// flags, when it has them: what airlock will write there must lie
	// outside the box's reach, so the kernel is told.
	report *string
	store  *storeFlags
}

// addKernelFlags defines the kernel's flags on fs; of names what the
// working directory belongs to in the help ("the command", "the calls").
func addKernelFlags(fs *flag.FlagSet, of string) *kernelFlags {
	return &kernelFlags{
		policy:  fs.String("policy", "", "policy `file` (default: airlock.yaml in the working directory, else the workspace profile)"),
		workdir: fs.String("workdir", "", "working `directory` of "+of+" (default: the current one)"),
		mode:    fs.String("mode", "observe", "observe (read and report) or fix (write the policy's fs.write paths)"),
		sandbox: fs.String("sandbox", "auto", "sandbox tier: auto, off (tier 0, unconfined), 1 or 2"),
		audit:   fs.String("audit", "", "audit log `file` (default: $XDG_STATE_HOME/airlock/audit.jsonl)"),
	}
}

// tier reads --sandbox; a bad value is a usage error of cmd.
func (k *kernelFlags) tier(cmd string) (sandbox.Tier, error) {
	t, err := sandbox.ParseTier(*k.sandbox)
	if err != nil {
		return 0, usagef("%s: --sandbox: %v", cmd, err)
	}
	return t, nil
}

// build wires the kernel the flags name, for cmd. terminal says whether a
// person may be asked on this terminal (not when the terminal carries the
// protocol); with, when set, adds to the configuration (the file store).
func (k *kernelFlags) build(env *Env, cmd string, terminal bool, with func(*wiring.Config)) (*wiring.Kernel, error) {
	tier, err := k.tier(cmd)
	if err != nil {
		return nil, err
	}
	if err := checkKernelValues(env, *k.mode, *k.workdir, *k.policy); err != nil {
		return nil, err
	}
	cfg := wiring.Config{
		PolicyFile: *k.policy, Workdir: *k.workdir, Dir: env.Dir, Mode: *k.mode, Getenv: env.Getenv,
		Terminal: terminal, AuditFile: *k.audit, Log: env.Log, TraceFile: env.Getenv("AIRLOCK_TRACE_FILE"),
		Tier: tier, Exe: env.Exe, Environ: env.Environ,
		Warn: func(s string) { fmt.Fprintf(env.Stderr, "airlock: %s\n", s) },
	}
	if k.report != nil && *k.report != "" {
		cfg.ReportFile = absFrom(env, *k.report)
	}
	if k.store != nil {
		// A store with no place to be fails when it is opened.
		cfg.StoreDir, _ = storeDir(env, *k.store.store)
	}
	if with != nil {
		with(&cfg)
	}
	return wiring.Build(cfg)
}

// checkKernelValues refuses, as usage mistakes (exit 2), the values of
// --mode, --workdir and --policy that name nothing: a mode that is not one, a
// working directory that is not there, a policy file that does not exist.
// Commands that only read the policy (policy explain, show) check the same.
func checkKernelValues(env *Env, mode, workdir, policyFile string) error {
	if mode != "observe" && mode != "fix" {
		return usagef("--mode %q: want observe or fix", mode)
	}
	if workdir != "" {
		if _, err := wiring.Workdir(env.Dir, workdir); err != nil {
			return badValue(err, "--workdir")
		}
	}
	if policyFile != "" {
		if _, err := os.Stat(absFrom(env, policyFile)); errors.Is(err, fs.ErrNotExist) {
			return usagef("--policy %s: no such file (name an existing policy file, or leave --policy out for airlock.yaml or the workspace profile)", policyFile)
		}
	}
	return nil
}
