package policy

import (
	"errors"
	"fmt"
	"github.com/airlock-run/airlock/policy/protected"
	"path"
	"slices"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/netrule"
	"github.com/airlock-run/airlock/policy/shellread"
)

// World is what a Checker knows about the machine the call runs on. The
// policy package does no I/O; the caller fills in the functions.
type World struct {
	// Workdir is the absolute working directory; relative paths and fs
	// entries are read against it.
	Workdir string
	// Home expands "~". Empty means a "~" path is never allowed.
	Home string
	// Mode is Observe (nothing writable) or Fix.
	Mode Mode
	// PATH is the box's program search path, for reports.
	PATH []string
	// Resolve returns the symlink-resolved form of an absolute path; for a
	// path that does not exist yet it resolves the longest existing prefix.
	// Nil means paths are compared in their lexical form only. An error
	// denies the path.
	Resolve func(path string) (string, error)
	// LookPath returns the file a bare program name runs on the box's PATH.
	// Nil (or an error) means no path-qualified program is ever the same as
	// an allowed bare name.
	LookPath func(name string) (string, error)
	// Box is true when commands run in a box of their own (tier 1): its own
	// process namespace, so background jobs end with it and every process
	// kill can reach is its own, and a private /tmp that $TMPDIR (unset or
	// /tmp there) names. False (the zero value) decides as if commands ran
	// on the host.
	Box bool
}

// Access is what a path is used for.
type Access uint8

const (
	// Read opens for reading, lists or executes.
	Read Access = iota
	// Write creates, changes or removes.
	Write
)

func (a Access) String() string {
	if a == Write {
		return "write"
	}
	return "read"
}

// Checker decides calls against one compiled policy. It is immutable and
// safe for concurrent use.
type Checker struct {
	p     *Policy
	world World

	read, write []ruledPattern
	policyFile  []pathPattern

	allowAll  bool           // shell.allow not given: any program
	allowBare map[string]int // bare name -> index in shell.allow
	// progs holds, for every program name the policy mentions, what the
	// hot path needs in one map lookup.
	progs     map[string]*progInfo
	allowPath []ruledPattern // path entries of shell.allow
	allowRule []string       // "shell.allow[i]"
	args      map[string]*argRules
	raw       bool
	spawn     bool

	net    *netrule.List
	dnsOff bool

	envExact map[string]string // name -> rule
	envGlobs []ruledWord

	tools map[string]*compiledTool

	grants     []Grant
	grantOK    []bool
	grantRules []string

	within *Checker
}

type ruledPattern struct {
	rule string
	pathPattern
}

type ruledWord struct {
	rule, pat string
}

// Compile prepares p for deciding calls in w. It fails only when the policy
// holds something that cannot be made into rules (a policy from Parse always
// compiles).
func (p *Policy) Compile(w World) (*Checker, error) {
	if p == nil {
		return nil, errs.Invalidf("policy: no policy to compile")
	}
	if w.Workdir == "" || !path.IsAbs(w.Workdir) {
		return nil, errs.Invalidf("policy: the working directory must be an absolute path, got %q", w.Workdir)
	}
	w.Workdir = path.Clean(w.Workdir)
	if w.Home != "" {
		if !path.IsAbs(w.Home) {
			return nil, errs.Invalidf("policy: the home directory must be an absolute path, got %q", w.Home)
		}
		w.Home = path.Clean(w.Home)
	}
	c := &Checker{p: p, world: w, raw: p.Shell.RawAllowed(), spawn: p.Shell.Spawn, grants: p.grants}
	for i, e := range p.FS.Read {
		if err := checkFSEntry(e); err != nil {
			return nil, errs.Invalidf("policy: fs.read[%d]: %q: %v", i, e, err)
		}
		c.read = append(c.read, c.ruled(fmt.Sprintf("fs.read[%d]", i), e)...)
	}
	for i, e := range p.FS.Write {
		if err := checkFSEntry(e); err != nil {
			return nil, errs.Invalidf("policy: fs.write[%d]: %q: %v", i, e, err)
		}
		c.write = append(c.write, c.ruled(fmt.Sprintf("fs.write[%d]", i), e)...)
	}
	for i, g := range c.grants {
		c.grantOK = append(c.grantOK, ValidateGrant(g) == nil)
		c.grantRules = append(c.grantRules, fmt.Sprintf("grants[%d]", i))
	}
	// The policy file, and the file airlock would read as the policy of
	// the working directory, are never writable from a run: a run that
	// could write either could widen its own next run.
	for _, f := range []string{p.Source, DefaultPolicyFile} {
		if f != "" && (path.IsAbs(f) || f == DefaultPolicyFile) {
			for _, pp := range c.patternsFor(f) {
				pp.literal = true
				c.policyFile = append(c.policyFile, pp)
			}
		}
	}

	c.allowAll = p.Shell.Allow == nil
	c.allowBare = map[string]int{}
	for i, a := range p.Shell.Allow {
		if err := checkProgram(a); err != nil {
			return nil, errs.Invalidf("policy: shell.allow[%d]: %q: %v", i, a, err)
		}
		r := fmt.Sprintf("shell.allow[%d]", i)
		c.allowRule = append(c.allowRule, r)
		if strings.Contains(a, "/") {
			for _, pp := range c.patternsFor(a) {
				pp.literal = false // an exact file, not a directory
				c.allowPath = append(c.allowPath, ruledPattern{rule: r, pathPattern: pp})
			}
			continue
		}
		if _, dup := c.allowBare[a]; !dup {
			c.allowBare[a] = i
		}
	}
	c.args = map[string]*argRules{}
	for prog, r := range p.Shell.Args {
		ar, err := compileArgRules(prog, r)
		if err != nil {
			return nil, err
		}
		c.args[prog] = ar
	}
	c.progs = map[string]*progInfo{}
	info := func(name string) *progInfo {
		pi := c.progs[name]
		if pi == nil {
			pi = &progInfo{allowIdx: -1, starts: shellread.Starts(name), execOpts: execOpts[name]}
			c.progs[name] = pi
		}
		return pi
	}
	for name, idx := range c.allowBare {
		info(name).allowIdx = idx
	}
	for name, ar := range c.args {
		info(name).args = ar
	}

	nl, err := netrule.Parse(p.Net.Allow, p.Net.Deny)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "policy")
	}
	c.net = nl
	switch p.Net.DNS {
	case "", "allowlist":
	case "none":
		c.dnsOff = true
	default:
		return nil, errs.Invalidf("policy: net.dns: %q: want allowlist or none", p.Net.DNS)
	}

	c.envExact = map[string]string{}
	for i, a := range p.Env.Allow {
		if err := checkEnvName(a, true); err != nil {
			return nil, errs.Invalidf("policy: env.allow[%d]: %q: %v", i, a, err)
		}
		r := fmt.Sprintf("env.allow[%d]", i)
		if hasMeta(a) {
			c.envGlobs = append(c.envGlobs, ruledWord{rule: r, pat: a})
		} else if _, dup := c.envExact[a]; !dup {
			c.envExact[a] = r
		}
	}
	for _, name := range sortedKeys(p.Env.Set) {
		c.envExact[name] = "env.set." + name
	}

	c.tools = map[string]*compiledTool{}
	for name, r := range p.Tools {
		if err := checkToolName(name); err != nil {
			return nil, errs.Invalidf("policy: tools.%s: %v", name, err)
		}
		ct := c.compileTool(name, r)
		c.tools[name] = &ct
	}

	if p.within != nil {
		in, err := p.within.Compile(w)
		if err != nil {
			return nil, err
		}
		c.within = in
	}
	return c, nil
}

// Policy returns the policy c was compiled from.
func (c *Checker) Policy() *Policy { return c.p }

// World returns the world c decides in.
func (c *Checker) World() World { return c.world }

func (c *Checker) ruled(rule, entry string) []ruledPattern {
	var out []ruledPattern
	for _, pp := range c.patternsFor(entry) {
		out = append(out, ruledPattern{rule: rule, pathPattern: pp})
	}
	return out
}

// patternsFor compiles an fs entry into its lexical pattern and, when World
// can resolve symlinks and the entry's literal part resolves elsewhere, the
// resolved pattern too. An entry that cannot be made absolute (a "~" entry
// without a home) compiles to nothing: it allows nothing.
func (c *Checker) patternsFor(entry string) []pathPattern {
	abs, ok := c.absolute(entry)
	if !ok {
		return nil
	}
	lex := path.Clean(abs)
	out := []pathPattern{{pat: lex, literal: !hasMeta(lex)}}
	if c.world.Resolve == nil {
		return out
	}
	// Resolve the part before the first glob segment.
	lit, rest := lex, ""
	if hasMeta(lex) {
		segs := strings.Split(lex, "/")
		k := 0
		for k < len(segs) && !hasMeta(segs[k]) {
			k++
		}
		lit = strings.Join(segs[:k], "/")
		if lit == "" {
			lit = "/"
		}
		rest = strings.Join(segs[k:], "/")
	}
	r, err := c.world.Resolve(lit)
	if err != nil || r == "" || !path.IsAbs(r) {
		return out
	}
	r = path.Clean(r)
	if rest != "" {
		r = path.Join(r, rest)
	}
	if r != lex {
		out = append(out, pathPattern{pat: r, literal: !hasMeta(r)})
	}
	return out
}

// absolute expands "~" and makes p absolute against the working directory,
// without cleaning it.
func (c *Checker) absolute(p string) (string, bool) { return c.absoluteIn("", p) }

// absoluteIn is absolute for a command that runs in dir (shellread's
// Command.Dir: "" the working directory, absolute, relative to the working
// directory, "~" or "~/...", or "?" when only known at run time).
func (c *Checker) absoluteIn(dir, p string) (string, bool) {
	if dir != "" && p != "" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") {
		base, ok := c.absolute(dir)
		if !ok || dir == "?" || strings.HasPrefix(dir, "?") {
			return "", false
		}
		return base + "/" + p, true
	}
	switch {
	case p == "":
		return "", false
	case p == "~" || strings.HasPrefix(p, "~/"):
		if c.world.Home == "" {
			return "", false
		}
		return c.world.Home + p[1:], true
	case strings.HasPrefix(p, "~"):
		return "", false
	case strings.HasPrefix(p, "/"):
		return p, true
	}
	return c.world.Workdir + "/" + p, true
}

// forms are the canonical spellings of one path: lexical and resolved.
type forms struct {
	lex, res string
	n        int
}

func (f *forms) list() []string {
	if f.n == 2 {
		return []string{f.lex, f.res}
	}
	return []string{f.lex}
}

var errResolve = errors.New("cannot resolve")

// canonical returns the lexical form (path.Clean of the absolute path) and
// the resolved form (World.Resolve of the absolute path as written, so a
// ".." after a symlink is read the way the kernel reads it).
func (c *Checker) canonical(p string) (forms, bool) { return c.canonicalIn("", p) }

func (c *Checker) canonicalIn(dir, p string) (forms, bool) {
	abs, ok := c.absoluteIn(dir, p)
	if !ok {
		return forms{}, false
	}
	f := forms{lex: path.Clean(abs), n: 1}
	if c.world.Resolve != nil {
		r, err := c.world.Resolve(abs)
		if err != nil || r == "" || !path.IsAbs(r) {
			return forms{}, false
		}
		r = path.Clean(r)
		if r != f.lex {
			f.res, f.n = r, 2
		}
	}
	return f, true
}

// systemRead is what every box can read: the system, read-only. Secrets
// that live under it are carved out below.
var systemReadDirs = [...]string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
	"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/stdin", "/dev/fd"}

var systemSecrets = [...]string{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private"}

// systemWrite is what every box can write whatever the mode: the sinks a
// command's output goes to.
var systemWriteDirs = [...]string{"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd"}

// SystemRead reports whether name (absolute, clean) is part of the system
// every box may read.
func SystemRead(name string) bool {
	for _, s := range systemSecrets {
		if underDir(s, name) {
			return false
		}
	}
	for _, d := range systemReadDirs {
		if underDir(d, name) {
			return true
		}
	}
	return false
}

func systemWrite(name string) bool {
	for _, d := range systemWriteDirs {
		if underDir(d, name) {
			return true
		}
	}
	return false
}

// Path decides an access to path (relative to the working directory,
// absolute or starting with "~/"). Both the lexical and the resolved form
// must be allowed, so neither ".." nor a symlink leads out of a rule.
func (c *Checker) Path(a Access, p string) Decision {
	d := c.path(a, p)
	for in := c.within; in != nil && d.Verdict != Deny; in = in.within {
		d = Strictest(d, in.path(a, p))
	}
	return d
}

func (c *Checker) path(a Access, p string) Decision { return c.pathIn(a, "", p) }

// pathIn decides an access to p by a command running in dir (see
// absoluteIn).
func (c *Checker) pathIn(a Access, dir, p string) Decision {
	if p == "" || strings.ContainsRune(p, 0) {
		return Decision{Verdict: Deny, Category: CatFS, Rule: "fs.path", Reason: "an empty or malformed path was refused"}
	}
	f, ok := c.canonicalIn(dir, p)
	if !ok {
		return Decision{Verdict: Deny, Category: CatFS, Rule: "fs.path",
			Reason: fmt.Sprintf("the path %q could not be resolved, so access to it was refused", p)}
	}
	if a == Write {
		for _, name := range f.list() {
			for _, pp := range c.policyFile {
				if policyFileCovers(pp, name) {
					return Decision{Verdict: Deny, Category: CatFS, Rule: "builtin.policy-file",
						Reason: "the policy file cannot be changed from inside a run"}
				}
			}
		}
		if allSystem(f, systemWrite) {
			return Decision{Verdict: Allow, Category: CatFS, Rule: "system"}
		}
		if c.world.Mode != Fix {
			return Decision{Verdict: Deny, Category: CatFS, Rule: "mode",
				Reason: fmt.Sprintf("writing %q was refused: this run may only read (observe mode)", p)}
		}
		rule, ok := coveredBy(f, c.write, nil)
		if !ok {
			return Decision{Verdict: Deny, Category: CatFS, Rule: "fs.write",
				Reason: fmt.Sprintf("writing %q is not allowed here", p)}
		}
		if gitMeta(f) {
			return Decision{Verdict: Escalate, Category: CatFS, Rule: "builtin.git-hooks",
				Reason: fmt.Sprintf("writing %q (repository hooks or configuration that run commands) needs a person's approval", p)}
		}
		if d, ok := c.protectedDecision(f, p); ok {
			return d
		}
		return Decision{Verdict: Allow, Category: CatFS, Rule: rule}
	}
	rule, ok := coveredBy(f, c.read, c.write)
	if !ok {
		return Decision{Verdict: Deny, Category: CatFS, Rule: "fs.read",
			Reason: fmt.Sprintf("reading %q is not allowed here", p)}
	}
	return Decision{Verdict: Allow, Category: CatFS, Rule: rule}
}

func allSystem(f forms, ok func(string) bool) bool {
	if !ok(f.lex) {
		return false
	}
	return f.n < 2 || ok(f.res)
}

// coveredBy reports whether every form of f is covered by a rule in a or b
// or by the system-read set (when b is given, i.e. for reads), and names the
// rule that covered the lexical form.
func coveredBy(f forms, a, b []ruledPattern) (string, bool) {
	rule := ""
	for k := 0; k < f.n; k++ {
		name := f.lex
		if k == 1 {
			name = f.res
		}
		r := ""
		for i := range a {
			if a[i].covers(name) {
				r = a[i].rule
				break
			}
		}
		if r == "" {
			for i := range b {
				if b[i].covers(name) {
					r = b[i].rule
					break
				}
			}
		}
		if r == "" && b != nil && SystemRead(name) {
			r = "system"
		}
		if r == "" {
			return "", false
		}
		if k == 0 {
			rule = r
		}
	}
	return rule, true
}

// gitMeta reports whether f is one of the files a repository's git reads
// as instructions (policy/protected's GitFiles: config, config.worktree,
// commondir, gitdir; submodules' too, under .git/modules), lies in one of
// its directories whose files run (GitDirs(true): hooks) or is a ".git"
// entry itself (a ".git" file redirects git to another repository): a
// write there runs code the next time a person, or an allowed git, uses
// the repository. It looks
// everywhere, not only below the working directory, because `git -C DIR`
// reaches any repository.
//
// Outside a ".git" directory it still catches a hook ("hooks/pre-commit"):
// a bare repository (any directory holding HEAD, objects and refs) runs its
// hooks when named by --git-dir. (The box's git reads bare repositories
// only when named outright, and --git-dir escalates, so a bare
// repository's config needs no rule of its own.) ".git" is compared
// without case: on a case-insensitive file system ".GIT" is the same
// directory.
func gitMeta(f forms) bool {
	for _, name := range f.list() {
		segs := strings.Split(name, "/")
		last := segs[len(segs)-1]
		if len(segs) > 1 && segs[len(segs)-2] == "hooks" && gitHooks[last] {
			return true
		}
		for k, seg := range segs {
			if !strings.EqualFold(seg, ".git") {
				continue
			}
			rest := segs[k+1:]
			if len(rest) == 0 || slices.ContainsFunc(protected.GitFiles(), func(f string) bool { return strings.EqualFold(rest[len(rest)-1], f) }) ||
				slices.ContainsFunc(rest, func(s string) bool {
					return slices.ContainsFunc(protected.GitDirs(true), func(d string) bool { return strings.EqualFold(s, d) })
				}) {
				return true
			}
		}
	}
	return false
}

// protectedDecision asks a person before a write to an entry of the one
// protected list (policy/protected, the list the sandbox holds read-only):
// a file a person's shell, editor, agent or package manager later runs or
// loads. The reader does not know which directory is writable, so the list
// is matched at every depth. Entries the policy takes off (fs.unprotect)
// pass; build files count only with fs.unattended_build.
func (c *Checker) protectedDecision(f forms, p string) (Decision, bool) {
	for _, name := range f.list() {
		e, ok := protected.Match(name, c.p.FS.UnattendedBuild)
		if !ok || slices.ContainsFunc(c.p.FS.Unprotect, func(u string) bool { return strings.TrimSuffix(u, "/") == e.Name() }) {
			continue
		}
		return Decision{Verdict: Escalate, Category: CatFS, Rule: "builtin.protected",
			Reason: fmt.Sprintf("writing %q (%s loads or runs it) needs a person's approval", p, e.Tool)}, true
	}
	return Decision{}, false
}

// gitHooks are the names git runs from a repository's hooks directory.
var gitHooks = map[string]bool{
	"applypatch-msg": true, "pre-applypatch": true, "post-applypatch": true, "pre-commit": true,
	"pre-merge-commit": true, "prepare-commit-msg": true, "commit-msg": true, "post-commit": true,
	"pre-rebase": true, "post-checkout": true, "post-merge": true, "pre-push": true, "pre-receive": true,
	"update": true, "proc-receive": true, "post-receive": true, "post-update": true,
	"reference-transaction": true, "push-to-checkout": true, "pre-auto-gc": true, "post-rewrite": true,
	"sendemail-validate": true, "fsmonitor-watchman": true, "p4-changelist": true,
	"p4-prepare-changelist": true, "p4-post-changelist": true, "p4-pre-submit": true,
	"post-index-change": true,
}

// Net decides a connection to host:port.
func (c *Checker) Net(host string, port int) Decision {
	d := c.netDecide(host, port)
	for in := c.within; in != nil && d.Verdict != Deny; in = in.within {
		d = Strictest(d, in.netDecide(host, port))
	}
	return d
}

func (c *Checker) netDecide(host string, port int) Decision {
	if c.net.Empty() {
		return Decision{Verdict: Deny, Category: CatNet, Rule: "net.allow",
			Reason: "network access is not allowed here"}
	}
	if c.dnsOff {
		if h, err := netrule.Canonical(host); err != nil || !isIPLiteral(h) {
			return Decision{Verdict: Deny, Category: CatNet, Rule: "net.dns",
				Reason: fmt.Sprintf("connecting to %q by name is not allowed here", host)}
		}
	}
	ok, rule := c.net.Match(host, port)
	if ok {
		return Decision{Verdict: Allow, Category: CatNet, Rule: rule}
	}
	if rule == "" {
		rule = "net.allow"
	}
	return Decision{Verdict: Deny, Category: CatNet, Rule: rule,
		Reason: fmt.Sprintf("connecting to %s port %d is not allowed here", host, port)}
}

func isIPLiteral(h string) bool {
	return strings.Contains(h, ":") || strings.Trim(h, "0123456789.") == ""
}

// loaderVars are environment names that change what a program loads or
// runs. A glob such as "*" never passes them; a policy must name them.
var loaderPrefixes = [...]string{"LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG"}
var loaderNames = map[string]bool{
	"BASH_ENV": true, "ENV": true, "PROMPT_COMMAND": true, "SHELLOPTS": true, "BASHOPTS": true, "PS4": true,
	"IFS": true, "NODE_OPTIONS": true, "PYTHONSTARTUP": true, "PYTHONPATH": true, "PYTHONHOME": true,
	"PERL5OPT": true, "PERL5LIB": true, "RUBYOPT": true, "RUBYLIB": true, "GIT_SSH": true,
	"GIT_SSH_COMMAND": true, "GIT_EXEC_PATH": true, "GIT_ASKPASS": true, "SSH_ASKPASS": true,
	"LESSOPEN": true, "LESSCLOSE": true, "JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "PATH": true,
}

func loaderVar(name string) bool {
	if loaderNames[name] {
		return true
	}
	for _, p := range loaderPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Env decides whether the environment variable name may be passed into the
// box from the caller's environment (or is set by the policy).
func (c *Checker) Env(name string) Decision {
	d := c.env(name)
	for in := c.within; in != nil && d.Verdict != Deny; in = in.within {
		d = Strictest(d, in.env(name))
	}
	return d
}

func (c *Checker) env(name string) Decision {
	if r, ok := c.envExact[name]; ok {
		return Decision{Verdict: Allow, Category: CatEnv, Rule: r}
	}
	for _, g := range c.envGlobs {
		if wordGlob(g.pat, name) {
			if loaderVar(name) {
				return Decision{Verdict: Deny, Category: CatEnv, Rule: "builtin.env-loader",
					Reason: fmt.Sprintf("the environment variable %s is not passed into the box", name)}
			}
			return Decision{Verdict: Allow, Category: CatEnv, Rule: g.rule}
		}
	}
	return Decision{Verdict: Deny, Category: CatEnv, Rule: "env.allow",
		Reason: fmt.Sprintf("the environment variable %s is not passed into the box", name)}
}

// Tool decides a tool call by name ("tool" or "server.function") and
// arguments.
func (c *Checker) Tool(name string, args map[string]any) Decision {
	d := c.tool(name, args)
	for in := c.within; in != nil && d.Verdict != Deny; in = in.within {
		d = Strictest(d, in.tool(name, args))
	}
	return d
}

func (c *Checker) tool(name string, args map[string]any) Decision {
	var d Decision
	if name == "" || strings.ContainsFunc(name, isControl) {
		return Decision{Verdict: Deny, Category: CatTools, Rule: "default", Reason: "a tool call without a valid name was refused"}
	}
	t, ok := c.toolLookup(name)
	if !ok {
		d = Decision{Verdict: Escalate, Category: CatTools, Rule: "default"}
	} else {
		v, rule := t.decide(c, args)
		d = Decision{Verdict: v, Category: CatTools, Rule: rule}
	}
	if d.Verdict == Escalate {
		if i, ok := c.toolGrant(name, args); ok {
			return Decision{Verdict: Allow, Category: CatTools, Rule: c.grantRules[i]}
		}
	}
	switch d.Verdict {
	case Deny:
		d.Reason = fmt.Sprintf("the tool %s is not allowed here", name)
	case Escalate:
		d.Reason = fmt.Sprintf("the tool %s needs a person's approval", name)
	}
	return d
}

// progInfo is what the policy says about one program name.
type progInfo struct {
	allowIdx int       // index in shell.allow, -1 when not listed by name
	args     *argRules // nil without argument rules
	starts   bool      // shellread.Starts
	execOpts []execOpt // its options that run another program
}

// policyFileCovers reports whether name is the policy file pp (or a path
// below it), compared without case: on a case-insensitive file system
// (tier 0 on macOS) AIRLOCK.yaml is the same file.
func policyFileCovers(pp pathPattern, name string) bool {
	if pp.covers(name) {
		return true
	}
	n := len(pp.pat)
	return len(name) >= n && strings.EqualFold(name[:n], pp.pat) && (len(name) == n || name[n] == '/')
}
