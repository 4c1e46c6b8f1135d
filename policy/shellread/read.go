package shellread

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// Command is one program that a shell string would start, or one shell
// builtin that acts like a program (eval, source, export, a function call).
//
// Commands are listed in the order their text appears; a wrapper comes before
// the program it starts, a command before the substitutions in its arguments.
type Command struct {
	// Argv is the command line after quotes and escapes are resolved. A word
	// that is only known at run time (a variable, a substitution, a glob, a
	// brace expansion, a leading ~) is kept as its raw source text, e.g.
	// `"$dir"/x`, and its index is listed in Dynamic. Argv is empty only for
	// a bare assignment that changes how later commands run (then Risk is set).
	Argv []string `json:"argv"`
	// Dynamic lists the indexes in Argv of words that are not literal. A
	// policy must never let such a word satisfy an allow pattern.
	Dynamic []int `json:"dynamic,omitempty"`
	// Assigns are environment assignments that apply to this command only:
	// prefixes (`FOO=1 git …`) and NAME=VALUE operands of env/sudo.
	Assigns []Assign `json:"assigns,omitempty"`
	// Via names the wrappers and shells this command was reached through,
	// outermost first, as they were spelled (["sudo", "env", "sh"]).
	Via []string `json:"via,omitempty"`
	// Redirects are the redirections that apply to this command, including
	// those of enclosing groups and wrappers.
	Redirects []Redirect `json:"redirects,omitempty"`
	// Background is true when the command may keep running after the shell
	// moves on: `&`, coproc, nohup, setsid -f, sudo -b, wget -b.
	Background bool `json:"background,omitempty"`
	// ArgsFromInput is true when more arguments arrive at run time (xargs,
	// find -exec's {}, rg --pre), so Argv is only a prefix.
	ArgsFromInput bool `json:"argsFromInput,omitempty"`
	// Undecidable says why this command cannot be decided before it runs;
	// non-empty means a person must decide.
	Undecidable string `json:"undecidable,omitempty"`
	// Risk says why the command may do more than its argv shows even though
	// the argv itself is known: an assignment of PATH, LD_PRELOAD, GIT_* and
	// the like. Non-empty means a person must decide.
	Risk string `json:"risk,omitempty"`
	// Function is true when Argv[0] names a function that the same shell
	// surely defined before this call (not inside a branch); its body's
	// commands are listed separately with InFunc set.
	Function bool `json:"function,omitempty"`
	// InFunc names the function whose body holds this command.
	InFunc string `json:"inFunc,omitempty"`
	// Builtin is true when Argv[0] is a shell builtin that starts no
	// program and changes no file by itself (cd, export, echo, test, …; see
	// builtinNames). Its redirections and substitutions are still listed.
	Builtin bool `json:"builtin,omitempty"`
	// Dir is the directory the command runs in when the string changed it
	// (cd, pushd, env -C): "" for the directory the string starts in, an
	// absolute path, a path relative to the start, "~" or "~/…" under the
	// home directory, or "?" when it is only known at run time (also when
	// it depends on whether an earlier cd failed: `cd /x; cmd`, unlike
	// `cd /x && cmd`).
	Dir string `json:"dir,omitempty"`
	// Parent is the index of the command that holds this one: the wrapper
	// that starts it, the command in whose arguments or redirections its
	// substitution sits, or the shell whose -c string contains it; -1 when
	// it is at the top level.
	Parent int `json:"parent"`
	// How says how Parent holds it: "wrapper", "cmdsubst", "procsubst",
	// "script" (sh -c, eval, trap, watch, a git setting that is a command), or
	// "" at the top level.
	How string `json:"how,omitempty"`
	// Upstream lists the indexes of the commands whose output may reach this
	// command's standard input through pipes (every earlier stage of every
	// pipeline it is a stage of).
	Upstream []int `json:"upstream,omitempty"`
	// Line and Col locate the command in the string (1-based). Commands found
	// inside a nested string carry the position of that string.
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Redirect is one redirection of a command's input or output.
type Redirect struct {
	// Op is the operator as written: ">", ">>", ">|", "&>", "&>>", "<>",
	// "<", ">&", "<&", "<<", "<<-", "<<<".
	Op string `json:"op"`
	// Fd is the descriptor number written before the operator, if any.
	Fd string `json:"fd,omitempty"`
	// Path is the target file after quote removal; for a here-document it is
	// empty, for a descriptor duplication it is the descriptor ("1", "-").
	Path string `json:"path"`
	// Write is true when the file may be created or changed.
	Write bool `json:"write,omitempty"`
	// Body is the text a here-document or here-string feeds to the command
	// (raw source text when Dynamic).
	Body string `json:"body,omitempty"`
	// Dynamic is true when Path or Body is raw source text only known at
	// run time.
	Dynamic bool `json:"dynamic,omitempty"`
	// Arg is true when the file is named in the program's own arguments
	// (`tee F`, `cp X F`, `dd of=F`, `rm F`) rather than by the shell; Op is
	// then "write" (created or changed), "remove" (removed, with all it
	// holds) or "link" (a link to it is made: `ln -s F L`, `cp -l F L`).
	Arg bool `json:"arg,omitempty"`
	// Glob is true when Path is an unquoted glob pattern (`*.o`,
	// `build/*`) with nothing else only known at run time: the files it
	// names are in the directory its literal part names.
	Glob bool `json:"glob,omitempty"`
}

// Assign is one NAME=VALUE environment assignment.
type Assign struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Dynamic is true when Value is raw source text only known at run time.
	Dynamic bool `json:"dynamic,omitempty"`
}

// Limits that keep Read bounded on hostile input.
const (
	// MaxSource is the longest string Read accepts.
	MaxSource = 1 << 20
	// MaxDepth bounds nested shell strings (sh -c "sh -c '…'") and wrapper
	// chains; anything deeper is Undecidable.
	MaxDepth = 8
	// MaxCommands bounds the number of commands one string may produce
	// (deciding a string is quadratic in it at worst: pipelines).
	MaxCommands = 4096
	// maxNesting bounds the syntax-tree nesting Read walks (a chain of
	// 200 pipes or && nests that deep).
	maxNesting = 200
)

// ErrTooLarge is returned when the string or what it expands to exceeds the
// limits above.
var ErrTooLarge = errors.New("shell string too large or too deeply nested")

// Dialect is the shell language a string is read in. It must be the one of
// the shell that runs the string: the same text is different commands in
// each (`echo $'\';rm x;#'` is one echo to bash, an echo and an rm to dash;
// `((rm x))` is arithmetic to bash, two subshells to dash).
type Dialect uint8

const (
	// Bash is the language of bash (and rbash).
	Bash Dialect = iota
	// POSIX is the language of POSIX sh as dash, ash and posh run it:
	// /bin/sh on Debian and Alpine, and what airlock's shell tool runs.
	POSIX
	// either is a shell known only at run time ($SHELL, a user's login
	// shell): the string must read the same as POSIX sh and as bash.
	either
)

func (d Dialect) String() string {
	switch d {
	case POSIX:
		return "sh"
	case either:
		return "sh or bash"
	}
	return "bash"
}

// DialectOf names the dialect of the shell prog (decided on its base name);
// false for a shell this reader does not read (zsh, ksh, …) or a program
// that is no shell.
func DialectOf(prog string) (Dialect, bool) {
	switch baseName(prog) {
	case "bash", "rbash":
		return Bash, true
	case "sh", "dash", "ash", "posh":
		return POSIX, true
	}
	return 0, false
}

// Read parses src as a bash script and returns every command it would run.
// A syntax error is returned as an error; the caller must not run src then.
func Read(src string) ([]Command, error) { return ReadIn(src, Bash) }

// ReadIn is Read for a string run by a shell of dialect d. A construct that
// d does not parse, or that its shell runs differently than this reader
// would read it, is an error.
func ReadIn(src string, d Dialect) ([]Command, error) {
	if len(src) > MaxSource {
		return nil, ErrTooLarge
	}
	if strings.IndexByte(src, 0) >= 0 {
		return nil, errors.New("shell string contains a NUL byte")
	}
	if nestingTooDeep(src) {
		return nil, ErrTooLarge
	}
	if d == either {
		return nil, errors.New("read shell string: a dialect must be named")
	}
	f, err := parse(src, d)
	if err != nil {
		return nil, err
	}
	r := newReader()
	r.stmts(f.Stmts, scope{src: src, parent: -1, shell: newShell(), dialect: d})
	if r.err != nil {
		return nil, r.err
	}
	if r.out == nil {
		r.out = []Command{}
	}
	return r.out, nil
}

func parse(src string, d Dialect) (*syntax.File, error) {
	if strings.IndexByte(src, '\r') >= 0 {
		// The parser takes a carriage return for a blank; bash takes it
		// for part of a word. `git status \r# $(curl x)` is a comment
		// after git to the parser, and a substitution bash runs.
		return nil, errors.New("parse shell string: a carriage return, which bash and this reader split differently")
	}
	lang := syntax.LangBash
	if d == POSIX {
		lang = syntax.LangPOSIX
	}
	p := syntax.NewParser(syntax.Variant(lang))
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, fmt.Errorf("parse shell string as %s: %w", d, err)
	}
	if why := differs(f, src, d); why != "" {
		return nil, fmt.Errorf("parse shell string as %s: %s", d, why)
	}
	return f, nil
}

// nestingTooDeep rejects strings whose bracket nesting alone exceeds what the
// walker allows, before the recursive parser spends time on them.
func nestingTooDeep(src string) bool {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '{', '[':
			depth++
			if depth > 4*maxNesting {
				return true
			}
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}

// reader accumulates commands for one Read call.
type reader struct {
	out []Command
	err error
	// deadline bounds the time one Read may take; a string that cannot be
	// read within it is refused.
	deadline time.Time
}

// MaxTime bounds the time one Read or ReadArgv may take.
const MaxTime = 2 * time.Second

func newReader() *reader { return &reader{deadline: time.Now().Add(MaxTime)} }

// scope is what an enclosing construct passes down to the commands in it.
type scope struct {
	src        string // text the syntax positions refer to
	via        []string
	parent     int
	how        string
	upstream   []int
	redirs     []Redirect
	background bool
	depth      int // nested shell strings and wrappers
	nesting    int // syntax nesting
	// line and col, when non-zero, replace syntax positions (nested strings).
	line, col int
	shell     *shellState
	dialect   Dialect // the language of the shell running these statements
	inFunc    string  // the function whose body this is
	cond      bool    // inside a branch that may not run
	noFuncs   bool    // names are not looked up as functions (command, builtin, wrappers)
}

func (s scope) pos(p syntax.Pos) (int, int) {
	if s.line != 0 {
		return s.line, s.col
	}
	return int(p.Line()), int(p.Col())
}

func (r *reader) add(c Command) int {
	if len(r.out) >= MaxCommands {
		if r.err == nil {
			r.err = ErrTooLarge
		}
		return -1
	}
	r.out = append(r.out, c)
	return len(r.out) - 1
}

func (r *reader) stmts(stmts []*syntax.Stmt, s scope) {
	for _, st := range stmts {
		r.stmt(st, s)
	}
}

func (r *reader) stmt(st *syntax.Stmt, s scope) {
	if r.err != nil || st == nil {
		return
	}
	s.nesting++
	if s.nesting > maxNesting || len(r.out)%64 == 0 && time.Now().After(r.deadline) {
		r.err = ErrTooLarge
		return
	}
	if st.Background || st.Coprocess || st.Disown {
		s.background = true
	}
	if _, simple := st.Cmd.(*syntax.CallExpr); !simple && len(st.Redirs) > 0 {
		// The redirections of a compound command apply to every command in
		// it; a simple command reads its own so that substitutions in them
		// are held by it.
		rds, why := r.redirects(st.Redirs, s, s.parent)
		s.redirs = concat(s.redirs, rds)
		if why != "" {
			r.flag(st, s, why)
		}
	}
	switch c := st.Cmd.(type) {
	case nil:
		// A statement of redirections only (`> file`) truncates or creates
		// the file; report it as a command without a program so the write
		// is seen.
		if len(st.Redirs) > 0 {
			line, col := s.pos(st.Pos())
			r.add(Command{Argv: []string{}, Redirects: s.redirs, Parent: s.parent, How: s.how,
				Via: s.via, Upstream: s.upstream, Background: s.background, Line: line, Col: col})
		}
	case *syntax.CallExpr:
		r.call(st, c, s)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			// Every stage runs in a subshell of its own.
			start := len(r.out)
			xs := s
			xs.shell = s.shell.fork()
			r.stmt(c.X, xs)
			ys := s
			ys.shell = s.shell.fork()
			ys.upstream = append(append([]int(nil), s.upstream...), seq(start, len(r.out))...)
			r.stmt(c.Y, ys)
		case syntax.AndStmt:
			// The right side runs only if the left succeeded, so a cd
			// on the left surely happened for it; afterwards either may
			// be where the shell is.
			r.stmt(c.X, s)
			sh := s.shell
			alt, hasAlt := sh.alt, sh.hasAlt
			sh.hasAlt = false
			ys := s
			ys.cond = true
			r.stmt(c.Y, ys)
			switch {
			case hasAlt && sh.hasAlt:
				// More than one cd may have failed: somewhere other
				// than dir, but a later && still runs in dir.
				sh.alt = "?"
			case hasAlt:
				sh.alt, sh.hasAlt = alt, true
			}
		default:
			r.stmt(c.X, s)
			ys := s
			ys.cond = true
			r.condStmts([]*syntax.Stmt{c.Y}, ys)
		}
	case *syntax.Subshell:
		ss := s
		ss.shell = s.shell.fork()
		r.stmts(c.Stmts, ss)
	case *syntax.Block:
		r.stmts(c.Stmts, s)
	case *syntax.IfClause:
		cs := s
		cs.cond = true
		before := s.shell.current()
		for ic := c; ic != nil; ic = ic.Else {
			r.stmts(ic.Cond, cs)
			r.stmts(ic.Then, cs)
		}
		s.shell.settle(before)
	case *syntax.WhileClause:
		s.shell.forgetAssigned(c)
		cs := s
		cs.cond = true
		r.condStmts(append(append([]*syntax.Stmt(nil), c.Cond...), c.Do...), cs)
	case *syntax.ForClause:
		s.cond = true
		defer s.shell.settle(s.shell.current())
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			s.shell.forgetAssigned(c)
			safe := true
			for _, w := range l.Items {
				lit, ok := literalText(w)
				safe = safe && ok && !strings.ContainsAny(lit, "[`$*?")
			}
			defer func() { s.shell.safe[l.Name.Value] = false }()
			s.shell.safe[l.Name.Value] = safe
			if n := l.Name.Value; n == "IFS" {
				r.flag(st, s, "a loop over IFS changes how later words are split")
			} else if RiskyEnv(n) {
				line, col := s.pos(st.Pos())
				r.add(Command{Argv: []string{}, Risk: "a loop assigns " + n + ", which changes what programs run or load",
					Parent: s.parent, How: s.how, Via: s.via, Line: line, Col: col, Dir: s.shell.current(), InFunc: s.inFunc})
			}
			for _, w := range l.Items {
				r.word(w, s, s.parent)
			}
		case *syntax.CStyleLoop:
			r.substsIn(l, s, s.parent)
		}
		r.stmts(c.Do, s)
	case *syntax.CaseClause:
		s.cond = true
		defer s.shell.settle(s.shell.current())
		r.word(c.Word, s, s.parent)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				r.word(p, s, s.parent)
			}
			r.stmts(it.Stmts, s)
		}
	case *syntax.FuncDecl:
		if _, joined := c.Body.Cmd.(*syntax.BinaryCmd); joined {
			// `f(){ :; } | true` defines f in a pipeline subshell, but the
			// parser takes the whole pipeline for the body.
			r.flag(st, s, "a function definition joined to a pipeline or list, which shells and this reader scope differently")
			return
		}
		// The body runs whenever the function is called; list its commands
		// as if it were run where it is defined. Only a definition that
		// surely runs makes later calls of the name function calls.
		names := funcNames(c)
		if !s.cond {
			for _, n := range names {
				s.shell.funcs[n] = true
			}
		}
		fs := s
		fs.cond = true
		if len(names) > 0 {
			fs.inFunc = names[0]
		}
		// The body runs where it is called, not here: its directory
		// changes stay in it, and a call of a function that may change
		// the directory leaves it unknown.
		fs.shell = s.shell.fork()
		if changesDir(c.Body) {
			for _, n := range names {
				s.shell.cdFuncs[n] = true
			}
			fs.shell.unknown()
		}
		r.stmt(c.Body, fs)
	case *syntax.TestDecl:
		r.stmt(c.Body, s)
	case *syntax.TimeClause:
		r.stmt(c.Stmt, s)
	case *syntax.CoprocClause:
		if c.Name != nil {
			if _, simple := c.Stmt.Cmd.(*syntax.CallExpr); simple || c.Stmt.Cmd == nil {
				// bash takes a NAME only before a compound command:
				// `coproc foo 2>/dev/null` runs foo.
				r.flag(st, s, "coproc NAME before a simple command, which bash runs as the command NAME")
				return
			}
		}
		s.background = true
		r.stmt(c.Stmt, s)
	case *syntax.DeclClause:
		r.decl(st, c, s)
	case *syntax.ArithmCmd, *syntax.LetClause, *syntax.TestClause:
		// No program runs, but their words may hold substitutions.
		if why := r.substsIn(c, s, s.parent); why != "" {
			r.flag(st, s, why)
		}
	default:
		r.flag(st, s, fmt.Sprintf("unsupported shell construct %T", c))
	}
}

// flag adds a command without a program that carries why the statement st
// cannot be decided.
func (r *reader) flag(st *syntax.Stmt, s scope, why string) {
	line, col := s.pos(st.Pos())
	r.add(Command{Argv: []string{}, Undecidable: why, Parent: s.parent, How: s.how, Via: s.via,
		Upstream: s.upstream, Redirects: s.redirs, Background: s.background, Line: line, Col: col,
		Dir: s.shell.dir, InFunc: s.inFunc})
}

// condStmts reads statements that may or may not run: a directory change
// in them leaves the directory unknown afterwards.
func (r *reader) condStmts(stmts []*syntax.Stmt, s scope) {
	before := s.shell.current()
	r.stmts(stmts, s)
	s.shell.settle(before)
}

// settle ends a construct that may or may not have run: if the directory
// changed in it, it is unknown afterwards.
func (sh *shellState) settle(before string) {
	if sh.current() != before {
		sh.unknown()
	}
}

// changesDir reports whether a function body may change the directory of
// the shell that calls it.
func changesDir(body *syntax.Stmt) bool {
	found := false
	syntax.Walk(body, func(n syntax.Node) bool {
		if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
			switch ce.Args[0].Lit() {
			case "cd", "pushd", "popd", "eval", "source", ".", "builtin", "command":
				found = true
			}
		}
		return !found
	})
	return found
}

func funcNames(fd *syntax.FuncDecl) []string {
	var out []string
	if fd.Name != nil {
		out = append(out, fd.Name.Value)
	}
	for _, n := range fd.Names {
		out = append(out, n.Value)
	}
	return out
}

func seq(a, b int) []int {
	out := make([]int, 0, b-a)
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

// ReadArgv returns what running argv directly (no shell) would run: argv
// itself first, then whatever its wrappers, -c strings and options start,
// read as Read reads them. No word of argv is expanded, so none is Dynamic.
func ReadArgv(argv []string) ([]Command, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errors.New("argument contains a NUL byte")
		}
	}
	r := newReader()
	r.add(Command{Argv: append([]string(nil), argv...), Parent: -1})
	r.program(0, scope{parent: -1, shell: newShell()})
	if r.err != nil {
		return nil, r.err
	}
	return r.out, nil
}

// Shell reports whether prog (decided on its base name) is a shell: its
// whole work is reading commands, from -c, a script file or its input.
func Shell(prog string) bool { return interpreterShells[baseName(prog)] }

// Starts reports whether prog (a bare name or a path; decided on its base
// name) may start other programs from its arguments, or write files they
// name (Writes), so that ReadArgv has something to find. It does not
// allocate.
func Starts(prog string) bool {
	base := baseName(prog)
	if interpreterShells[base] {
		return true
	}
	if _, ok := wrappers[base]; ok {
		return true
	}
	if _, ok := execOpts[base]; ok {
		return true
	}
	if _, ok := grammars()[base]; ok {
		return true
	}
	if Writes(base) {
		return true
	}
	switch base {
	case "find", "git", "watch", "flock", "su", "runuser", "script", "eval", "trap", "builtin", "fd", "fdfind",
		"capsh", "gdb", "sg", "hyperfine", "sed", "gsed", "awk", "gawk", "mawk", "nawk", "go", "make", "gmake", "parallel", "sem", "bwrap",
		"daemonize", "start-stop-daemon", "tmux", "screen", "dbus-launch", "dbus-daemon", "ssh-agent", "gpg-agent",
		"wget", "wget2", "systemd-run", "at", "batch", "disown",
		// Builtins Read marks (they are no programs exec could start).
		"source", ".", "alias", "enable", "hash", "fc", "shopt", "bind", "complete", "compgen",
		"read", "printf", "mapfile", "readarray", "getopts":
		return true
	}
	return false
}
