package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/airlock-run/airlock/policy/shellread"
)

// ShellDecision is the answer for a shell string: one decision per simple
// command it would run, and the strictest of them.
type ShellDecision struct {
	Overall  Decision          `json:"overall"`
	Commands []CommandDecision `json:"commands"`
}

// CommandDecision is the decision for one simple command of a shell string.
type CommandDecision struct {
	Argv     []string `json:"argv"`
	Decision Decision `json:"decision"`
	// Via names the wrappers the command was reached through.
	Via []string `json:"via,omitempty"`
	// Line and Col locate the command in the string.
	Line int `json:"line"`
	Col  int `json:"col"`
	// Grantable is true when a person's "allow always" may be stored for
	// this command (see GrantFor): its argv is fully known.
	Grantable bool `json:"grantable"`
}

// harmlessBuiltins are shell builtins that start nothing and reach nothing;
// with a shell.allow list they need not be listed.
var harmlessBuiltins = map[string]bool{
	"cd": true, "pwd": true, "echo": true, "true": true, "false": true, "test": true, "[": true, ":": true,
	"exit": true, "return": true, "shift": true, "wait": true, "break": true, "continue": true,
	"set": true, "export": true, "local": true, "declare": true, "typeset": true, "readonly": true,
	"pushd": true, "popd": true, "dirs": true, "type": true, "getopts": true, "umask": true, "times": true, "jobs": true,
}

// boxScratch is the box's private /tmp.
var boxScratch = []string{"/tmp"}

// shellBuiltins are builtins of sh and bash that start no program by
// themselves; whatever they run, assign or write the reader lists or marks
// on its own (trap's command, `command prog`, `read PATH`, `hash -p`,
// `shopt -s expand_aliases`, exec's program and redirections). With a
// shell.allow list they are decided as builtins, not refused as programs,
// when a shell runs them (not a wrapper: `env kill` is the program).
var shellBuiltins = map[string]bool{
	"read": true, "printf": true, "unset": true, "trap": true, "command": true, "shopt": true, "hash": true,
	"ulimit": true, "exec": true, "mapfile": true, "readarray": true, "getopts": true, "let": true,
	"wait": true, "jobs": true, "fg": true, "bg": true, "times": true, "umask": true, "type": true, "kill": true,
}

// builtinRun reports whether cmds[i] is a shell builtin that the shell
// itself runs, and not a program of the same name.
func (c *Checker) builtinRun(cmds []shellread.Command, i int) bool {
	cmd := &cmds[i]
	prog := cmd.Argv[0]
	if !shellBuiltins[prog] || !cmd.Builtin && !readerBuiltin(prog) || cmd.Function {
		return false
	}
	if cmd.How == "wrapper" {
		// Only command and builtin run a builtin; other wrappers run the
		// program.
		p := cmd.Parent
		if p < 0 || p >= len(cmds) || len(cmds[p].Argv) == 0 || cmds[p].Argv[0] != "command" && cmds[p].Argv[0] != "builtin" {
			return false
		}
	}
	if cmd.Parent < 0 && cmd.How == "" && cmd.Line == 0 {
		return false // an argv run without a shell: the program
	}
	if prog == "command" && len(cmd.Argv) > 1 && strings.HasPrefix(cmd.Argv[1], "-") && strings.Contains(cmd.Argv[1], "p") {
		return false // command -p searches a PATH of its own
	}
	if prog == "kill" && !c.world.Box {
		return killsOwn(cmd)
	}
	return true
}

// readerBuiltin: the reader reads these itself and does not set Builtin
// on them.
func readerBuiltin(prog string) bool {
	switch prog {
	case "trap", "command", "shopt", "hash", "exec", "mapfile", "readarray", "let":
		return true
	}
	return false
}

// killsOwn reports whether every process kill names is one the string
// started or its own shell: a job (%1), $! or $$. On the host any other
// pid may be someone else's.
func killsOwn(cmd *shellread.Command) bool {
	n := 0
	for k, a := range cmd.Argv[1:] {
		if strings.HasPrefix(a, "-") && n == 0 && !isDyn(cmd, k+1) {
			continue // a signal or -l
		}
		switch a {
		case "$!", `"$!"`, "${!}", `"${!}"`, "$$", `"$$"`:
		default:
			if !strings.HasPrefix(a, "%") || isDyn(cmd, k+1) {
				return false
			}
		}
		n++
	}
	return n > 0
}

func isDyn(cmd *shellread.Command, i int) bool {
	for _, d := range cmd.Dynamic {
		if d == i {
			return true
		}
	}
	return false
}

// Argv decides running argv directly (no shell). If argv's program starts
// others from its arguments (sh -c, env, sudo, xargs, find -exec, git -c …),
// each of them is decided too and the strictest verdict wins.
func (c *Checker) Argv(argv []string) Decision {
	if len(argv) == 0 || argv[0] == "" {
		return Decision{Verdict: Deny, Category: CatShell, Rule: "default", Reason: "an empty command was refused"}
	}
	pi := c.progs[baseName(argv[0])]
	starts := false
	if pi != nil {
		starts = pi.starts
	} else {
		starts = shellread.Starts(argv[0])
	}
	if !starts || !shellread.StartsArgv(argv) {
		// One program and nothing else: the hot path, allocation-free
		// when it allows.
		var one [1]shellread.Command
		one[0] = shellread.Command{Argv: argv, Parent: -1}
		d := c.command(one[:], 0)
		for in := c.within; in != nil && d.Verdict != Deny; in = in.within {
			d = Strictest(d, in.command(one[:], 0))
		}
		return d
	}
	cmds, err := shellread.ReadArgv(argv)
	if err != nil {
		return Decision{Verdict: Escalate, Category: CatShell, Rule: "shell.parse",
			Reason: "the command could not be read completely, so it needs a person's approval"}
	}
	return c.decideAll(cmds).Overall
}

// Shell decides a shell string run by /bin/sh -c, as the shell tool runs it:
// every simple command it would run is decided on its own. The string is
// read as POSIX sh, the language of the dash that runs it; a string that
// does not parse as sh, or holds a construct dash runs differently than it
// reads, escalates. With shell.raw false every string is refused.
func (c *Checker) Shell(src string) ShellDecision {
	for k := c; k != nil; k = k.within {
		if !k.raw {
			return ShellDecision{Overall: Decision{Verdict: Deny, Category: CatShell, Rule: "shell.raw",
				Reason: "shell command strings are not accepted here; run the program with its arguments instead"}}
		}
	}
	cmds, err := shellread.ReadIn(src, shellread.POSIX)
	if err != nil {
		return ShellDecision{Overall: Decision{Verdict: Escalate, Category: CatShell, Rule: "shell.parse",
			Reason: "the shell command could not be read completely as sh (" + parseWhy(err) + "), so it needs a person's approval"}}
	}
	return c.decideAll(cmds)
}

// parseWhy is the part of a read error an agent may see: what in its own
// string could not be read.
func parseWhy(err error) string {
	m := err.Error()
	if len(m) > 200 {
		m = m[:197] + "..."
	}
	return m
}

// Commands decides commands already read by shellread.Read or ReadArgv.
func (c *Checker) Commands(cmds []shellread.Command) ShellDecision {
	return c.decideAll(cmds)
}

func (c *Checker) decideAll(cmds []shellread.Command) ShellDecision {
	sd := ShellDecision{Overall: Decision{Verdict: Allow, Category: CatShell, Rule: "default"}}
	sd.Commands = make([]CommandDecision, 0, len(cmds))
	for i := range cmds {
		d := c.command(cmds, i)
		for in := c.within; in != nil && d.Verdict != Deny; in = in.within {
			d = Strictest(d, in.command(cmds, i))
		}
		cmd := &cmds[i]
		sd.Commands = append(sd.Commands, CommandDecision{Argv: cmd.Argv, Decision: d, Via: cmd.Via,
			Line: cmd.Line, Col: cmd.Col, Grantable: static(cmd) && grantRefusal(cmd.Argv) == ""})
		if i == 0 || d.Verdict > sd.Overall.Verdict {
			sd.Overall = d
		}
	}
	return sd
}

// static reports whether a command's argv is exactly what will run.
func static(cmd *shellread.Command) bool {
	return len(cmd.Argv) > 0 && len(cmd.Dynamic) == 0 && cmd.Undecidable == "" && cmd.Risk == "" && !cmd.ArgsFromInput && !cmd.Function
}

// command decides cmds[i] against c's own policy (not the one it was
// narrowed from).
func (c *Checker) command(cmds []shellread.Command, i int) Decision {
	cmd := &cmds[i]
	d := Decision{Verdict: Allow, Category: CatShell, Rule: "default"}
	if !c.raw && (cmd.How == "script" || len(cmd.Argv) > 0 && shellread.Shell(cmd.Argv[0])) {
		// A string run by sh -c, eval, trap or a git setting is a shell
		// string however it arrived; so is what a shell reads from a
		// script file or its input (`sh < script`, `bash -s`, `sh x.sh`).
		return Decision{Verdict: Deny, Category: CatShell, Rule: "shell.raw",
			Reason: "shell command strings are not accepted here; run the program with its arguments instead"}
	}
	// A program name only known at run time is left to the Undecidable
	// escalation below: it may or may not be an allowed program.
	dynamicProg := len(cmd.Argv) > 0 && len(cmd.Dynamic) > 0 && cmd.Dynamic[0] == 0
	if len(cmd.Argv) > 0 && !cmd.Function && !dynamicProg {
		d = c.program(cmds, i)
	}
	if dynamicProg && cmd.Undecidable == "" {
		d = Strictest(d, Decision{Verdict: Escalate, Category: CatShell, Rule: "shell.undecidable",
			Reason: fmt.Sprintf("%s runs a program only known at run time, so it needs a person's approval", describeCmd(cmd.Argv))})
	}
	if d.Verdict == Deny {
		return d
	}
	where := shellread.Where{Workdir: c.world.Workdir, Home: c.world.Home}
	if c.world.Box {
		where.Scratch = boxScratch
	}
	rule, catastrophic := shellread.Catastrophic(cmds, i, where)
	if catastrophic {
		d = Strictest(d, Decision{Verdict: Escalate, Category: CatShell, Rule: "builtin." + rule.ID, Reason: rule.Reason})
	}
	// A person's "allow always" lifts what the command line itself
	// escalated, only for exactly that command line. A grant is an argv,
	// not a place: it never lifts a catastrophic rule (`rm -rf ..`
	// approved in one directory is the home directory in another), nor
	// applies after a cd has moved the command elsewhere.
	if d.Verdict == Escalate && static(cmd) && !catastrophic && cmd.Dir == "" {
		if g, ok := c.argvGrant(cmd.Argv); ok {
			d = Decision{Verdict: Allow, Category: CatShell, Rule: g}
		}
	}
	if cmd.Undecidable != "" {
		what := describeCmd(cmd.Argv)
		if len(cmd.Argv) == 0 && !strings.Contains(cmd.Undecidable, "redirect") && !strings.Contains(cmd.Undecidable, "descriptor") {
			what = "a construct in the string" // a flagged construct, not a redirection
		}
		d = Strictest(d, Decision{Verdict: Escalate, Category: CatShell, Rule: "shell.undecidable",
			Reason: fmt.Sprintf("%s cannot be decided before it runs (%s), so it needs a person's approval", what, cmd.Undecidable)})
	}
	if cmd.Risk != "" {
		d = Strictest(d, Decision{Verdict: Escalate, Category: CatShell, Rule: "builtin.env-assign",
			Reason: fmt.Sprintf("%s changes how programs run (%s), so it needs a person's approval", describeCmd(cmd.Argv), cmd.Risk)})
	}
	if cmd.Background && !c.spawn && !c.world.Box {
		// In a box the job ends with the box; on the host it outlives
		// the call.
		return Decision{Verdict: Deny, Category: CatShell, Rule: "shell.spawn",
			Reason: fmt.Sprintf("%s would keep running in the background, which is not allowed here", describeCmd(cmd.Argv))}
	}
	for _, r := range cmd.Redirects {
		rd := c.redirect(r, cmd.Dir)
		if rd.Verdict > d.Verdict {
			d = rd
			if d.Verdict == Deny {
				return d
			}
		}
	}
	return d
}

func describeCmd(argv []string) string {
	if len(argv) == 0 {
		return "a redirection"
	}
	s := strings.Join(argv, " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// redirect decides a redirection as a file access: a write for output, a
// read for input.
func (c *Checker) redirect(r shellread.Redirect, dir string) Decision {
	if r.Arg {
		return c.argFile(r, dir)
	}
	switch r.Op {
	case "<<", "<<-", "<<<":
		return Decision{Verdict: Allow, Category: CatFS, Rule: "default"}
	case ">&", "<&":
		if !r.Write && !r.Dynamic {
			return Decision{Verdict: Allow, Category: CatFS, Rule: "default"} // a descriptor duplication
		}
	}
	if r.Dynamic && tildeOnly(r.Path) {
		// `> ~/x` is dynamic to the reader only because of the "~", which
		// the Checker expands from World.Home itself.
		r.Dynamic = false
	}
	if r.Dynamic || strings.ContainsAny(r.Path, "$`") {
		return Decision{Verdict: Escalate, Category: CatFS, Rule: "fs.path",
			Reason: "a redirection whose file is only known at run time needs a person's approval"}
	}
	a := Read
	if r.Write {
		a = Write
	}
	if dir == "?" && !strings.HasPrefix(r.Path, "/") && !tildeOnly(r.Path) {
		return Decision{Verdict: Escalate, Category: CatFS, Rule: "fs.path",
			Reason: "a redirection into a directory only known at run time needs a person's approval"}
	}
	return c.pathIn(a, dir, r.Path)
}

// program decides what runs: argv[0] against shell.allow, the arguments
// against shell.args, the built-in command rules, and grants.
func (c *Checker) program(cmds []shellread.Command, i int) Decision {
	cmd := &cmds[i]
	argv := cmd.Argv
	prog := argv[0]
	base := baseName(prog)
	qualified := len(base) != len(prog)

	d := Decision{Verdict: Allow, Category: CatShell, Rule: "default"}
	restricted := !c.allowAll
	pi := c.progs[base]
	if !c.allowAll {
		switch {
		case !qualified && pi != nil && pi.allowIdx >= 0:
			d.Rule = c.allowRule[pi.allowIdx]
		case !qualified && harmlessBuiltins[prog] && (cmd.Builtin || cmd.Parent < 0 && len(cmds) == 1):
			d.Rule = "shell.builtins"
		case !qualified && c.builtinRun(cmds, i):
			d.Rule = "shell.builtins"
		case !qualified:
			return c.notAllowed(prog)
		default:
			rule, ok := c.allowedPath(prog, base, cmd.Dir)
			if !ok {
				return c.notAllowed(prog)
			}
			d.Rule = rule
		}
	}

	var ar *argRules
	if pi != nil {
		ar = pi.args
	}
	if ar != nil {
		restricted = true
		switch {
		case cmd.ArgsFromInput:
			d = Strictest(d, Decision{Verdict: Escalate, Category: CatShell, Rule: ar.baseRule})
		case len(cmd.Dynamic) > 0:
			// A word only known at run time could be anything; it can
			// neither satisfy an allow pattern nor be trusted to miss a
			// deny pattern.
			d = Strictest(d, Decision{Verdict: Escalate, Category: CatShell, Rule: ar.baseRule})
		default:
			ad := ar.decide(argv[1:])
			if ad.Verdict > Allow {
				d = ad
			} else if ad.Rule != "" {
				d.Rule = ad.Rule // an allow pattern is the more specific reason
			}
		}
		if d.Verdict == Deny {
			d.Reason = fmt.Sprintf("running %s with these arguments is not allowed here", base)
			return d
		}
	}
	if restricted && (pi == nil && execOption(base, argv[1:]) || pi != nil && execOptionIn(base, pi.execOpts, argv[1:])) {
		d = Strictest(d, Decision{Verdict: Escalate, Category: CatShell, Rule: "builtin.exec-option"})
	}
	if d.Verdict == Escalate && d.Reason == "" {
		d.Reason = fmt.Sprintf("running %s with these arguments needs a person's approval", describeCmd(argv))
	}
	return d
}

func (c *Checker) notAllowed(prog string) Decision {
	return Decision{Verdict: Deny, Category: CatShell, Rule: "shell.allow",
		Reason: fmt.Sprintf("the program %q is not allowed here", prog)}
}

// allowedPath decides a path-qualified program: it must be a path entry of
// shell.allow, or the very file an allowed bare name resolves to on the
// box's PATH (`/usr/bin/git` where `git` is allowed; never `/tmp/git` or
// `./git`).
func (c *Checker) allowedPath(prog, base, dir string) (string, bool) {
	f, ok := c.canonicalIn(dir, prog)
	if !ok {
		return "", false
	}
	for _, ap := range c.allowPath {
		if f.lex == ap.pat && (f.n < 2 || f.res == ap.pat || pathIn(c.allowPath, ap.rule, f.res)) {
			return ap.rule, true
		}
	}
	idx, ok := c.allowBare[base]
	if !ok || c.world.LookPath == nil {
		return "", false
	}
	lp, err := c.world.LookPath(base)
	if err != nil || lp == "" || !strings.HasPrefix(lp, "/") {
		return "", false
	}
	lf, ok := c.canonical(lp)
	if !ok {
		return "", false
	}
	// The same file: equal lexically, or equal once symlinks are resolved
	// (/bin/git and /usr/bin/git on a merged-/usr system).
	same := f.lex == lf.lex
	if !same && c.world.Resolve != nil {
		same = f.final() == lf.final()
	}
	if !same {
		return "", false
	}
	return c.allowRule[idx], true
}

func (f *forms) final() string {
	if f.n == 2 {
		return f.res
	}
	return f.lex
}

func pathIn(ps []ruledPattern, rule, name string) bool {
	for _, p := range ps {
		if p.rule == rule && p.pat == name {
			return true
		}
	}
	return false
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// tildeOnly reports whether p is "~" or "~/..." with nothing else a shell
// would expand.
func tildeOnly(p string) bool {
	return (p == "~" || strings.HasPrefix(p, "~/")) && !strings.ContainsAny(p, "$`*?[{\\'\"")
}

// argFile decides a file that a program writes or removes through its own
// arguments (`tee F`, `cp X F`, `dd of=F`, `ln -s X F`, `rm F`, `sed -i`).
// The sandbox makes everything outside fs.write read-only, in observe mode
// everything, so only the built-in protections are decided here, the same
// as for a redirection: the policy file is never written, and repository
// hooks and configuration escalate. Removing a directory that holds the
// policy file escalates too: without it the next run falls back to the
// workspace profile, which may be wider.
func (c *Checker) argFile(r shellread.Redirect, dir string) Decision {
	allow := Decision{Verdict: Allow, Category: CatFS, Rule: "default"}
	if r.Dynamic && tildeOnly(r.Path) {
		r.Dynamic = false
	}
	if rest := shellread.TmpdirRest(r.Path); r.Dynamic && c.world.Box && rest != "" {
		// In a box $TMPDIR is its private /tmp.
		r.Path, r.Dynamic = boxScratch[0]+rest, false
	}
	if r.Dynamic {
		return Decision{Verdict: Escalate, Category: CatFS, Rule: "fs.path",
			Reason: "a file this command writes or removes is only known at run time, so it needs a person's approval"}
	}
	if dir == "?" && !strings.HasPrefix(r.Path, "/") && !tildeOnly(r.Path) {
		return Decision{Verdict: Escalate, Category: CatFS, Rule: "fs.path",
			Reason: "a file this command writes in a directory only known at run time needs a person's approval"}
	}
	// Removing repository metadata runs nothing; only writes and links
	// are held to the repository protections.
	remove := r.Op == "remove"
	lit, rest := r.Path, []string(nil)
	if r.Glob {
		lit, rest = splitGlob(r.Path)
		for _, seg := range rest {
			if !remove && wordGlob(seg, ".git") {
				return gitMetaDecision(r.Path)
			}
		}
	}
	f, ok := c.canonicalIn(dir, lit)
	if !ok {
		return Decision{Verdict: Deny, Category: CatFS, Rule: "fs.path",
			Reason: fmt.Sprintf("the path %q could not be resolved, so access to it was refused", r.Path)}
	}
	for _, name := range f.list() {
		for _, pp := range c.policyFile {
			switch {
			case rest == nil && policyFileCovers(pp, name) && r.Op == "link":
				return Decision{Verdict: Escalate, Category: CatFS, Rule: "builtin.policy-file",
					Reason: fmt.Sprintf("a link to %q would let a later write change the policy file, so it needs a person's approval", r.Path)}
			case rest == nil && policyFileCovers(pp, name):
				return Decision{Verdict: Deny, Category: CatFS, Rule: "builtin.policy-file",
					Reason: "the policy file cannot be changed from inside a run"}
			case underDir(name, pp.pat) && (rest == nil && remove || rest != nil && globReaches(rest, name, pp.pat)):
				return Decision{Verdict: Escalate, Category: CatFS, Rule: "builtin.policy-file",
					Reason: fmt.Sprintf("%q may change or remove the policy file, so it needs a person's approval", r.Path)}
			}
		}
	}
	if !remove && gitMeta(f) {
		return gitMetaDecision(r.Path)
	}
	if d, ok := c.protectedDecision(f, r.Path); ok && !remove && r.Op != "link" {
		return d
	}
	if remove {
		p := r.Path
		if rest != nil {
			p = lit + "/" // what a glob names is inside its directory, through any link
		}
		if d, bad := c.removeThroughLink(p, dir, f); bad {
			return d
		}
	}
	return allow
}

// removeThroughLink catches a removal that looks inside the working
// directory but reaches out of it through a symbolic link. rm does not
// follow a link it is given, but it does follow one written with a
// trailing slash (`rm -rf link/` removes what link points at), and links
// in the leading directories always.
func (c *Checker) removeThroughLink(p, dir string, f forms) (Decision, bool) {
	if c.world.Resolve == nil || !underDir(c.world.Workdir, f.lex) {
		return Decision{}, false
	}
	abs, ok := c.absoluteIn(dir, p)
	if !ok {
		return Decision{}, false
	}
	target := f.final()
	if !strings.HasSuffix(abs, "/") && !strings.HasSuffix(abs, "/.") && path.Clean(abs) != "/" {
		clean := path.Clean(abs)
		parent, err := c.world.Resolve(path.Dir(clean))
		if err != nil || !path.IsAbs(parent) {
			return Decision{}, false
		}
		target = path.Join(parent, path.Base(clean))
	}
	if c.world.Home != "" && underDir(target, c.world.Home) {
		return Decision{Verdict: Escalate, Category: CatShell, Rule: "builtin.rm-home",
			Reason: fmt.Sprintf("removing %q would remove the home directory through a symbolic link, so it needs a person's approval", p)}, true
	}
	if !underDir(c.world.Workdir, target) {
		return Decision{Verdict: Escalate, Category: CatShell, Rule: "builtin.rm-outside",
			Reason: fmt.Sprintf("removing %q reaches outside the working directory through a symbolic link, so it needs a person's approval", p)}, true
	}
	return Decision{}, false
}

func gitMetaDecision(p string) Decision {
	return Decision{Verdict: Escalate, Category: CatFS, Rule: "builtin.git-hooks",
		Reason: fmt.Sprintf("writing %q (repository hooks or configuration that run commands) needs a person's approval", p)}
}

// splitGlob splits a glob path into its literal directory ("." when the
// first segment holds the glob) and the segments from the first glob on.
func splitGlob(p string) (string, []string) {
	segs := strings.Split(p, "/")
	k := 0
	for k < len(segs) && !hasMeta(segs[k]) {
		k++
	}
	lit := strings.Join(segs[:k], "/")
	switch {
	case lit == "" && strings.HasPrefix(p, "/"):
		lit = "/"
	case lit == "":
		lit = "."
	}
	return lit, segs[k:]
}

// globReaches reports whether the glob segments rest, read in directory
// dir, may name file (a path below dir) or one of its ancestors below dir.
// A "*" is taken to match names starting with a dot (bash's dotglob).
func globReaches(rest []string, dir, file string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(file, dir), "/")
	if rel == "" {
		return false
	}
	fsegs := strings.Split(rel, "/")
	for k := 0; k < len(rest) && k < len(fsegs); k++ {
		if rest[k] == "" {
			continue
		}
		if !wordGlob(rest[k], fsegs[k]) {
			return false
		}
	}
	return true
}
