package shellread

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellState is what one shell process remembers between statements: the
// directory it is in and the functions it has defined. Subshells,
// substitutions and pipeline stages get a copy.
type shellState struct {
	// dir is where the shell is if every cd so far succeeded ("" = where
	// the string starts; see Command.Dir). A cd can fail and the shell
	// goes on where it was, so after a cd alt holds that other directory
	// until a command is known to run only after the cd succeeded (the
	// right side of &&).
	dir    string
	alt    string
	hasAlt bool
	funcs  map[string]bool // functions defined unconditionally so far
	// cdFuncs are functions whose bodies may change the directory.
	cdFuncs map[string]bool
	// safe holds the variables bash arithmetic may name (see arith.go).
	safe map[string]bool
}

func newShell() *shellState {
	return &shellState{funcs: map[string]bool{}, cdFuncs: map[string]bool{}, safe: map[string]bool{}}
}

func (sh *shellState) fork() *shellState {
	if sh == nil {
		return newShell()
	}
	n := &shellState{dir: sh.dir, alt: sh.alt, hasAlt: sh.hasAlt,
		funcs: make(map[string]bool, len(sh.funcs)), cdFuncs: make(map[string]bool, len(sh.cdFuncs)),
		safe: make(map[string]bool, len(sh.safe))}
	for k, v := range sh.safe {
		n.safe[k] = v
	}
	for k, v := range sh.funcs {
		n.funcs[k] = v
	}
	for k, v := range sh.cdFuncs {
		n.cdFuncs[k] = v
	}
	return n
}

// current is the directory commands run in now: "?" when it depends on
// whether an earlier cd failed.
func (sh *shellState) current() string {
	if sh.hasAlt && sh.alt != sh.dir {
		return "?"
	}
	return sh.dir
}

// cd records a directory change that may fail.
func (sh *shellState) cd(to string) {
	sh.alt, sh.hasAlt = sh.current(), true
	sh.dir = to
}

// unknown forgets where the shell is.
func (sh *shellState) unknown() {
	sh.dir, sh.alt, sh.hasAlt = "?", "", false
}

// call reads one simple command.
func (r *reader) call(st *syntax.Stmt, ce *syntax.CallExpr, s scope) {
	line, col := s.pos(st.Pos())
	idx := r.add(Command{Parent: s.parent})
	if idx < 0 {
		return
	}
	c := Command{Via: s.via, Parent: s.parent, How: s.how, Upstream: s.upstream,
		Background: s.background, Line: line, Col: col, Dir: s.shell.current(), InFunc: s.inFunc}
	why := ""
	for _, a := range ce.Assigns {
		as, w := r.assign(a, s, idx)
		c.Assigns = append(c.Assigns, as)
		why = firstNonEmpty(why, w)
	}
	for i, w := range ce.Args {
		v := r.word(w, s, idx)
		c.Argv = append(c.Argv, v.val)
		if v.dynamic {
			c.Dynamic = append(c.Dynamic, i)
		}
		why = firstNonEmpty(why, v.why)
	}
	if c.Argv == nil {
		c.Argv = []string{}
	}
	rds, rwhy := r.redirects(st.Redirs, s, idx)
	c.Redirects = concat(s.redirs, rds)
	c.Undecidable = firstNonEmpty(why, rwhy)
	c.Risk = riskOf(c.Assigns)
	if len(c.Argv) == 0 {
		for _, a := range ce.Assigns {
			if a.Name != nil {
				s.shell.markValue(a.Name.Value, a.Value, a.Array)
			}
		}
		// A bare assignment changes the shell itself, so a risky one
		// affects every later command of this shell.
		if c.Risk == "" && c.Undecidable == "" && len(c.Redirects) == 0 && len(r.out) == idx+1 {
			r.out = r.out[:idx]
			return
		}
	}
	r.out[idx] = c
	if len(ce.Args) == 1 && len(ce.Args[0].Parts) == 1 {
		if eg, ok := ce.Args[0].Parts[0].(*syntax.ExtGlob); ok && eg.Op == syntax.GlobExcept && eg.Pattern != nil {
			// bash without extglob (its default in scripts) reads
			// `!(cmd)` as a negated subshell; the parser reads a glob.
			// List the commands bash would run as well.
			r.out[idx].Undecidable = "!(…) is a negated subshell to bash but a glob to other readers"
			r.nestedText(eg.Pattern.Value, s, c.Line, c.Col)
			return
		}
	}
	r.program(idx, s)
}

// nestedText reads text as statements of the current shell's subshell, at
// the position of the current scope.
func (r *reader) nestedText(text string, s scope, line, col int) {
	if s.depth+1 > MaxDepth || nestingTooDeep(text) {
		return
	}
	f, err := parse(text, s.dialect)
	if err != nil {
		return
	}
	ns := s
	ns.src = text
	ns.depth++
	ns.line, ns.col = line, col
	ns.shell = s.shell.fork()
	r.stmts(f.Stmts, ns)
}

// assign resolves one NAME=VALUE prefix or declaration operand.
func (r *reader) assign(a *syntax.Assign, s scope, parent int) (Assign, string) {
	var as Assign
	if a.Name != nil {
		as.Name = a.Name.Value
	}
	why := ""
	switch {
	case a.Array != nil:
		as.Value = "(…)"
		as.Dynamic = true
		why = r.substsIn(a.Array, s, parent)
	case a.Value != nil:
		v := r.word(a.Value, s, parent)
		as.Value, as.Dynamic, why = v.val, v.dynamic, v.why
	}
	if a.Index != nil {
		as.Dynamic = true
		why = firstNonEmpty(why, r.substsIn(a.Index, s, parent))
		if as.Name != "BASH_CMDS" && as.Name != "BASH_ALIASES" { // bash's own associative arrays
			why = firstNonEmpty(why, s.arithWhy(a.Index)) // an indexed array's subscript is arithmetic
		}
	}
	if as.Name == "IFS" {
		why = firstNonEmpty(why, "assigning IFS changes how later words are split")
	}
	return as, why
}

// decl reads export/declare/local/readonly/typeset.
func (r *reader) decl(st *syntax.Stmt, d *syntax.DeclClause, s scope) {
	line, col := s.pos(st.Pos())
	idx := r.add(Command{Parent: s.parent})
	if idx < 0 {
		return
	}
	c := Command{Argv: []string{d.Variant.Value}, Via: s.via, Parent: s.parent, How: s.how,
		Upstream: s.upstream, Background: s.background, Line: line, Col: col, Dir: s.shell.current(),
		InFunc: s.inFunc, Builtin: true}
	why := ""
	for _, a := range d.Args {
		if a.Name == nil && a.Naked && a.Value != nil {
			if f := a.Value.Lit(); strings.HasPrefix(f, "-") && strings.Contains(f, "n") {
				why = firstNonEmpty(why, "a name reference (-n) makes later assignments reach another variable")
			}
		}
		as, w := r.assign(a, s, idx)
		why = firstNonEmpty(why, w)
		if a.Name != nil {
			s.shell.markValue(a.Name.Value, a.Value, a.Array)
		}
		switch {
		case a.Name == nil && a.Naked:
			// An operand without a name: an option such as -x, or a word
			// only known at run time that may itself be NAME=VALUE.
			if as.Dynamic {
				why = firstNonEmpty(why, "declares a variable whose name is only known at run time")
				c.Dynamic = append(c.Dynamic, len(c.Argv))
			}
			c.Argv = append(c.Argv, as.Value)
		case a.Naked:
			c.Argv = append(c.Argv, as.Name)
		default:
			c.Argv = append(c.Argv, as.Name+"="+as.Value)
			if as.Dynamic {
				c.Dynamic = append(c.Dynamic, len(c.Argv)-1)
			}
			c.Assigns = append(c.Assigns, as)
		}
	}
	rds, rwhy := r.redirects(st.Redirs, s, idx)
	c.Redirects = concat(s.redirs, rds)
	c.Undecidable = firstNonEmpty(why, rwhy)
	c.Risk = riskOf(c.Assigns)
	r.out[idx] = c
}

// declOperands reads the NAME=VALUE operands of export, readonly and local
// parsed as a plain command, as decl reads a declaration.
func declOperands(c *Command) {
	if len(c.Assigns) > 0 {
		return // read as a declaration already
	}
	for i := 1; i < len(c.Argv); i++ {
		a := c.Argv[i]
		eq := strings.IndexByte(a, '=')
		if isDynamic(c, i) && (eq <= 0 || !isName(a[:eq])) {
			// `export $x` splits x into words that may be NAME=VALUE.
			c.Undecidable = firstNonEmpty(c.Undecidable, "declares a variable whose name is only known at run time")
			continue
		}
		if eq <= 0 {
			continue
		}
		as := Assign{Name: a[:eq], Value: a[eq+1:], Dynamic: isDynamic(c, i)}
		if as.Name == "IFS" {
			c.Undecidable = firstNonEmpty(c.Undecidable, "assigning IFS changes how later words are split")
		}
		c.Assigns = append(c.Assigns, as)
	}
	c.Risk = firstNonEmpty(c.Risk, riskOf(c.Assigns))
}

func concat(a, b []Redirect) []Redirect {
	if len(a) == 0 {
		return b
	}
	return append(append([]Redirect(nil), a...), b...)
}

// program looks at what the command at idx runs: a wrapper's program, a
// nested shell string, a directory change, a function.
func (r *reader) program(idx int, s scope) {
	c := &r.out[idx]
	if len(c.Argv) == 0 || c.Undecidable != "" && len(c.Dynamic) > 0 && c.Dynamic[0] == 0 {
		return
	}
	if len(c.Dynamic) > 0 && c.Dynamic[0] == 0 {
		c.Undecidable = "the program name is only known at run time"
		return
	}
	name := c.Argv[0]
	if !strings.Contains(name, "/") && s.shell.cdFuncs[name] && !s.noFuncs {
		// The function may have changed the directory (or not).
		defer s.shell.unknown()
	}
	if !strings.Contains(name, "/") && s.shell.funcs[name] && !s.noFuncs {
		c.Function = true
		clear(s.shell.safe) // the body may assign anything
		return
	}
	// The base name as Starts reads it: "prog/" names no file exec runs.
	base := baseName(name)
	r.daemon(idx, base)
	if !strings.Contains(name, "/") {
		if builtinNames[name] {
			c.Builtin = true
		}
		switch name {
		case "cd", "pushd", "popd":
			s.shell.cd(changeDir(s.shell.current(), c))
			return
		case "read", "printf", "mapfile", "readarray", "getopts":
			if risky := riskyBuiltin(c.Argv); risky != "" {
				c.Undecidable = firstNonEmpty(c.Undecidable, risky)
			}
			for _, n := range assignedNames(c.Argv) {
				s.shell.safe[n] = false
				if i := strings.IndexByte(n, '['); i > 0 && strings.HasSuffix(n, "]") {
					n = n[:i] // an array element: PATH[0] is PATH
				}
				switch {
				case !isName(n):
					c.Undecidable = firstNonEmpty(c.Undecidable, "assigns a variable whose name is only known at run time")
				case n == "IFS":
					c.Undecidable = firstNonEmpty(c.Undecidable, "assigning IFS changes how later words are split")
				case RiskyEnv(n):
					c.Risk = firstNonEmpty(c.Risk, "assigns "+n+", which changes what programs run or load")
				}
			}
			return
		case "jobs":
			// `jobs -x cmd args` runs cmd.
			for k := 1; k < len(c.Argv); k++ {
				a := c.Argv[k]
				if isDynamic(c, k) {
					c.Undecidable = firstNonEmpty(c.Undecidable, "jobs with an option only known at run time")
					return
				}
				if a == "--" || len(a) < 2 || a[0] != '-' {
					return
				}
				if strings.IndexByte(a, 'x') > 0 {
					r.inner(idx, k+1, s, innerOpts{})
					return
				}
			}
			return
		case "unset":
			for _, a := range c.Argv[1:] {
				delete(s.shell.funcs, a)
			}
			return
		case "export", "readonly", "local", "declare", "typeset":
			// In POSIX sh these are ordinary builtins, not declarations
			// the parser takes apart: read their NAME=VALUE operands.
			declOperands(c)
			return
		case "eval":
			r.evalArgs(idx, s)
			return
		case "source", ".":
			clear(s.shell.safe)
			c.Undecidable = firstNonEmpty(c.Undecidable, "runs the commands of a file, which are only known at run time")
			return
		case "alias":
			if len(c.Argv) > 1 {
				c.Undecidable = firstNonEmpty(c.Undecidable, "an alias changes what a later command name runs")
			}
			return
		case "enable", "hash", "fc", "shopt", "bind", "complete", "compgen":
			if risky := riskyBuiltin(c.Argv); risky != "" {
				c.Undecidable = firstNonEmpty(c.Undecidable, risky)
			}
			return
		case "trap":
			r.trap(idx, s)
			return
		case "builtin":
			if len(c.Argv) > 1 {
				r.inner(idx, 1, s, innerOpts{sameShell: true})
			}
			return
		}
	}
	if interpreterShells[base] {
		r.shellArgs(idx, s)
		return
	}
	if spec, ok := wrappers[base]; ok {
		r.unwrap(idx, spec, s)
		return
	}
	switch base {
	case "find":
		r.findExec(idx, s)
	case "git":
		r.gitExec(idx, s)
	case "watch":
		r.watch(idx, s)
	case "flock", "su", "runuser", "script":
		r.dashC(idx, s)
	case "capsh", "gdb", "sg", "hyperfine":
		r.otherRunners(idx, base, s)
	case "sed", "gsed":
		r.sedScripts(idx, s)
	case "awk", "gawk", "mawk", "nawk":
		r.awkProgram(idx)
	case "go":
		r.goExec(idx, s)
	case "make", "gmake":
		r.makeProgram(idx)
	case "parallel", "sem", "bwrap", "start-stop-daemon":
		r.undecidable(idx, "%s", opaqueRunners[base])
	}
	if _, ok := execOpts[base]; ok {
		r.execOptions(idx, base, s)
	}
	if g, ok := grammars()[base]; ok {
		r.runGrammar(idx, 1, g, base, s)
	}
	r.optionWords(idx, base)
	r.fileWrites(idx, base)
}

// changeDir follows cd, pushd and popd so relative paths of later commands
// can be placed. Anything not known statically becomes "?".
func changeDir(dir string, c *Command) string {
	args := c.Argv[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		args = args[1:]
	}
	if c.Argv[0] == "popd" || len(args) > 1 {
		return "?"
	}
	if len(args) == 0 {
		return "~"
	}
	if len(c.Dynamic) > 0 || args[0] == "-" || strings.HasPrefix(args[0], "+") {
		if len(c.Dynamic) > 0 && isHomeWord(args[0]) {
			return path.Clean("~" + homeRest(args[0]))
		}
		return "?"
	}
	t := args[0]
	if path.IsAbs(t) {
		return path.Clean(t)
	}
	if dir == "?" {
		return dir
	}
	if dir == "" {
		return path.Clean(t)
	}
	out := path.Clean(dir + "/" + t)
	if strings.HasPrefix(dir, "~") && out != "~" && !strings.HasPrefix(out, "~/") {
		return "?" // climbed out of the home directory: keep it simple
	}
	return out
}

// evalArgs reads `eval` of literal words as a nested script.
func (r *reader) evalArgs(idx int, s scope) {
	c := &r.out[idx]
	if len(c.Argv) < 2 {
		return
	}
	if len(c.Dynamic) > 0 {
		c.Undecidable = firstNonEmpty(c.Undecidable, "eval of a word only known at run time")
		return
	}
	r.script(idx, strings.Join(c.Argv[1:], " "), s)
}

// trap reads the command string of a trap as a nested script.
func (r *reader) trap(idx int, s scope) {
	c := &r.out[idx]
	args := c.Argv[1:]
	off := 1
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if args[0] == "--" {
			args, off = args[1:], off+1
			break
		}
		args, off = args[1:], off+1
	}
	if len(args) < 2 {
		return
	}
	if isDynamic(c, off) {
		c.Undecidable = firstNonEmpty(c.Undecidable, "a trap whose command is only known at run time")
		return
	}
	r.script(idx, args[0], s)
}

func isDynamic(c *Command, i int) bool {
	for _, d := range c.Dynamic {
		if d == i {
			return true
		}
	}
	return false
}

// script reads text as a script run by the command at idx (sh -c, eval,
// trap, a git setting that is a command). eval, trap and builtins run it in
// the same shell; every other program hands it to a shell known only at run
// time, so it must read the same in sh and bash.
func (r *reader) script(idx int, text string, s scope) {
	c := &r.out[idx]
	d := either
	if c.Builtin || c.Argv[0] == "eval" || c.Argv[0] == "trap" {
		d = s.dialect
	}
	r.scriptIn(idx, text, s, d)
}

// scriptIn is script for a shell of dialect d.
func (r *reader) scriptIn(idx int, text string, s scope, d Dialect) {
	c := &r.out[idx]
	if s.depth+1 > MaxDepth {
		c.Undecidable = firstNonEmpty(c.Undecidable, "shell strings nested too deeply")
		return
	}
	if nestingTooDeep(text) {
		c.Undecidable = firstNonEmpty(c.Undecidable, "shell string nested too deeply")
		return
	}
	if d == either {
		// Read it as sh; it must also parse as bash and start the same
		// programs there.
		if why := r.sameInBoth(text, s); why != "" {
			c.Undecidable = firstNonEmpty(c.Undecidable, why)
			return
		}
		d = POSIX
	}
	f, err := parse(text, d)
	if err != nil {
		c.Undecidable = firstNonEmpty(c.Undecidable, "a nested shell string does not parse: "+err.Error())
		return
	}
	c = &r.out[idx]
	ns := scope{
		dialect:    d,
		src:        text,
		via:        appendVia(c.Via, c.Argv[0]),
		parent:     idx,
		how:        "script",
		upstream:   c.Upstream,
		redirs:     withoutHereDocs(c.Redirects),
		background: c.Background,
		depth:      s.depth + 1,
		nesting:    s.nesting,
		line:       c.Line,
		col:        c.Col,
		shell:      s.shell.fork(),
		inFunc:     s.inFunc,
	}
	if c.Builtin || c.Argv[0] == "eval" || c.Argv[0] == "trap" {
		// eval and trap run in the same shell; their via is the shell's.
		ns.via = c.Via
		ns.shell = s.shell
	}
	r.stmts(f.Stmts, ns)
}

// withoutHereDocs drops here-documents and here-strings: a shell that gets
// a script as its input has consumed them; the commands of the script do
// not read them as a script again.
func withoutHereDocs(rs []Redirect) []Redirect {
	var out []Redirect
	for _, r := range rs {
		if r.Op != "<<" && r.Op != "<<-" && r.Op != "<<<" {
			out = append(out, r)
		}
	}
	return out
}

func appendVia(via []string, name string) []string {
	return append(append([]string(nil), via...), name)
}

// innerOpts describes the program a wrapper starts.
type innerOpts struct {
	assigns    []Assign
	background bool
	fromInput  bool
	dir        string // a directory the wrapper changes to (env -C)
	end        int    // end index in the wrapper's argv (0 = to the end)
	how        string // "" = "wrapper"
	// argv, when non-nil, is the program's argv instead of the wrapper's
	// argv[from:end] (env -S, xargs without a program, rg --pre), with the
	// indexes of its dynamic words.
	argv    []string
	dynamic []int
	// sameShell: the program runs in the shell itself (command and
	// builtin run builtins such as cd there).
	sameShell bool
}

// inner adds the program that the command at idx starts from its argv[from:]
// and reads what that program runs in turn.
func (r *reader) inner(idx, from int, s scope, o innerOpts) int {
	w := r.out[idx]
	end := len(w.Argv)
	if o.end > 0 {
		end = o.end
	}
	argv := o.argv
	if argv == nil {
		if from >= end {
			return -1
		}
		argv = append([]string(nil), w.Argv[from:end]...)
	}
	n := Command{
		Argv:          argv,
		Assigns:       o.assigns,
		Via:           appendVia(w.Via, w.Argv[0]),
		Redirects:     w.Redirects,
		Background:    w.Background || o.background,
		ArgsFromInput: w.ArgsFromInput || o.fromInput,
		Parent:        idx,
		How:           firstNonEmpty(o.how, "wrapper"),
		Upstream:      w.Upstream,
		Line:          w.Line,
		Col:           w.Col,
		Dir:           w.Dir,
		InFunc:        w.InFunc,
	}
	if o.dir != "" {
		n.Dir = changeDir(w.Dir, &Command{Argv: []string{"cd", o.dir}})
	}
	if o.argv != nil {
		n.Dynamic = o.dynamic
	} else {
		for _, d := range w.Dynamic {
			if d >= from && d < end {
				n.Dynamic = append(n.Dynamic, d-from)
			}
		}
	}
	n.Risk = riskOf(n.Assigns)
	if s.depth+1 > MaxDepth {
		n.Undecidable = "wrappers nested too deeply"
	}
	j := r.add(n)
	if j < 0 || n.Undecidable != "" {
		return j
	}
	ns := s
	ns.depth++
	ns.noFuncs = true // a wrapper starts a program or builtin, never a function
	if !o.sameShell {
		ns.shell = s.shell.fork()
	}
	r.program(j, ns)
	return j
}

func (r *reader) undecidable(idx int, format string, args ...any) {
	r.out[idx].Undecidable = firstNonEmpty(r.out[idx].Undecidable, fmt.Sprintf(format, args...))
}

// assignedNames lists the variables that read, printf -v, mapfile,
// readarray and getopts assign.
func assignedNames(argv []string) []string {
	var valued, arrayOpt string
	switch argv[0] {
	case "read":
		valued, arrayOpt = "adinNptu", "a"
	case "printf":
		valued, arrayOpt = "v", "v"
	case "mapfile", "readarray":
		valued = "dnOsuCc"
	case "getopts":
		if len(argv) > 2 {
			return argv[2:3]
		}
		return nil
	}
	var names []string
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		for k := 1; k < len(a); k++ {
			if strings.IndexByte(valued, a[k]) < 0 {
				continue
			}
			v := a[k+1:]
			if v == "" && i+1 < len(argv) {
				i++
				v = argv[i]
			}
			if strings.IndexByte(arrayOpt, a[k]) >= 0 {
				names = append(names, v)
			}
			break
		}
	}
	switch argv[0] {
	case "read", "mapfile", "readarray":
		names = append(names, argv[i:]...)
	}
	return names
}
