package shellread

import (
	"strings"
)

// wrapSpec is the option syntax of a program that starts another program
// from its operands. Options are parsed the way the real program does; an
// option not listed makes the command undecidable rather than guessed.
type wrapSpec struct {
	short    string   // short options without a value
	shortV   string   // short options that take a value (attached or next word)
	shortOpt string   // short options with an optional attached value
	long     []string // long options without a value (an =value is allowed)
	longV    []string // long options that take a value
	numeric  bool     // -NUMBER is an option (nice -5)
	operands int      // operands before the program (timeout DURATION)
	assigns  bool     // NAME=VALUE operands before the program (env, sudo)
	noExec   string   // short options after which no program runs (command -v)
	noExecL  []string // long options after which no program runs
	bg       bool     // the program outlives the shell (nohup)
	input    bool     // the program gets more arguments at run time (xargs)
	dashIsI  bool     // a lone "-" means -i (env)
	// loose: options not listed are taken as flags instead of making the
	// command undecidable. Used for programs that run a command but whose
	// options are many; the program found may be wrong, never missed.
	loose bool
	// emptyRuns, when non-nil, is the program run when no operand names one
	// (xargs runs echo).
	emptyRuns []string
}

// wrappers are the exec wrappers Read looks through, by program base name.
var wrappers = map[string]wrapSpec{
	"env": {short: "i0v", shortV: "uCS", long: []string{"ignore-environment", "null", "debug",
		"list-signal-handling", "block-signal", "default-signal", "ignore-signal"},
		longV: []string{"unset", "chdir", "split-string"}, assigns: true, dashIsI: true},
	"command": {short: "pvV", noExec: "vV"},
	"exec":    {short: "cl", shortV: "a"},
	"nohup":   {bg: true},
	"nice":    {shortV: "n", longV: []string{"adjustment"}, numeric: true},
	"ionice": {short: "thV", shortV: "cnpPu", long: []string{"ignore"},
		longV: []string{"class", "classdata", "pid", "pgid", "uid"}, noExec: "pPuhV", noExecL: []string{"pid", "pgid", "uid"}},
	"timeout": {short: "vf", shortV: "sk", long: []string{"preserve-status", "foreground", "verbose"},
		longV: []string{"signal", "kill-after"}, operands: 1},
	"stdbuf": {shortV: "ioe", longV: []string{"input", "output", "error"}},
	"setsid": {short: "cfwhV", long: []string{"ctty", "fork", "wait"}, noExec: "hV"},
	"xargs": {short: "0prtxo", shortV: "adEILnPs", shortOpt: "eil",
		// --eof and --replace take a value only after "=".
		long: []string{"null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits", "eof", "replace"},
		longV: []string{"arg-file", "delimiter", "max-lines", "max-args", "max-procs",
			"max-chars", "process-slot-var"}, input: true, emptyRuns: []string{"echo"}},
	"sudo": {short: "AbBEeHiKklnNPSsVv", shortV: "CDghprTtUu",
		long: []string{"askpass", "background", "bell", "edit", "set-home", "login", "remove-timestamp",
			"reset-timestamp", "list", "non-interactive", "no-update", "preserve-groups", "stdin", "shell",
			"version", "validate", "preserve-env"},
		longV:  []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"},
		noExec: "KklVve", noExecL: []string{"remove-timestamp", "reset-timestamp", "list", "version", "validate", "edit"},
		assigns: true},
	"doas":    {short: "nsL", shortV: "uC", noExec: "LC"},
	"busybox": {},
	"time": {short: "pvaq", shortV: "fo", long: []string{"portability", "verbose", "append", "quiet"},
		longV: []string{"format", "output"}},
	"chroot":   {long: []string{"skip-chdir"}, longV: []string{"userspec", "groups"}, operands: 1},
	"taskset":  {short: "acphV", long: []string{"all-tasks", "cpu-list", "pid"}, noExec: "phV", noExecL: []string{"pid"}, operands: 1},
	"unbuffer": {short: "p"},
	// Programs that run a command given after their options, read on a
	// best-effort basis (loose).
	"strace":      {loose: true, shortV: "abeEIoOpPsSUXu", noExec: "p"},
	"ltrace":      {loose: true, shortV: "aAeEFlnopsuxXDw", noExec: "p"},
	"valgrind":    {loose: true},
	"unshare":     {loose: true, shortV: "SGRw", longV: []string{"propagation", "setgroups", "root", "wd"}},
	"nsenter":     {loose: true, shortV: "tSG", longV: []string{"target", "setuid", "setgid"}},
	"setpriv":     {loose: true},
	"chrt":        {loose: true, shortV: "TPD", noExec: "p", operands: 1},
	"prlimit":     {loose: true, shortV: "p", noExec: "p"},
	"numactl":     {loose: true, shortV: "CNmpiP"},
	"fakeroot":    {loose: true, shortV: "lsib"},
	"eatmydata":   {loose: true},
	"tini":        {loose: true, shortV: "pe"},
	"dumb-init":   {loose: true, shortV: "r"},
	"catatonit":   {loose: true},
	"xvfb-run":    {loose: true, shortV: "nsfewp"},
	"dbus-launch": {loose: true},
	"proxychains": {loose: true, shortV: "f"}, "proxychains4": {loose: true, shortV: "f"},
	"torsocks":    {loose: true, shortV: "upaP"},
	"trickle":     {loose: true, shortV: "udwtln"},
	"faketime":    {loose: true, short: "mf", longV: []string{"date-prog"}, operands: 1},
	"firejail":    {loose: true},
	"pkexec":      {loose: true, longV: []string{"user"}},
	"systemd-run": {loose: true, shortV: "pEuMHs", longV: []string{"property", "setenv", "unit", "machine", "host", "description", "slice", "working-directory", "uid", "gid", "nice"}},
	"screen":      {loose: true, shortV: "cehpSsTtX"},
	"caffeinate":  {short: "dimsu", shortV: "tw"},
	// More programs that run the command after their options; without
	// them `setarch x86_64 rm -rf /` would hide rm from the built-in rules.
	"setarch":          {loose: true, short: "vRFZLXBIST3", operands: 1},
	"linux32":          {loose: true, short: "vRFZLXBIST3"},
	"linux64":          {loose: true, short: "vRFZLXBIST3"},
	"i386":             {loose: true, short: "vRFZLXBIST3"},
	"x86_64":           {loose: true, short: "vRFZLXBIST3"},
	"uname26":          {loose: true, short: "vRFZLXBIST3"},
	"cgexec":           {loose: true, shortV: "g"},
	"runcon":           {loose: true, shortV: "turl"},
	"chpst":            {loose: true, shortV: "uUbe/nlLmdosaflcrtp"},
	"setuidgid":        {loose: true, operands: 1},
	"envuidgid":        {loose: true, operands: 1},
	"envdir":           {loose: true, operands: 1},
	"softlimit":        {loose: true, shortV: "mdosaflcrtp"},
	"rlwrap":           {loose: true, shortV: "aAbCDeEfFgHlmnoOpPqsStwz"},
	"dbus-run-session": {loose: true, longV: []string{"config-file", "dbus-daemon"}},
	"systemd-cat":      {loose: true, shortV: "tp", longV: []string{"identifier", "priority", "stderr-priority", "level-prefix", "namespace"}},
	"systemd-inhibit":  {loose: true, longV: []string{"what", "who", "why", "mode"}},
	"torify":           {loose: true},
	"catchsegv":        {loose: true},
	"chronic":          {loose: true},
	"ifne":             {loose: true},
	"entr":             {loose: true, input: true},
	"nq":               {loose: true, bg: true},
	"tsp":              {loose: true, shortV: "LDnfgdEi", bg: true},
	"daemonize":        {loose: true, shortV: "ceopluE", bg: true},
}

// interpreterShells run the string after -c as a script.
var interpreterShells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true,
	"yash": true, "posh": true, "rbash": true, "lksh": true, "pdksh": true, "oksh": true,
}

// builtinNames are the builtins that start no program and write no file by
// themselves (their redirections are reported separately).
var builtinNames = map[string]bool{
	"cd": true, "pushd": true, "popd": true, "dirs": true, "pwd": true, "echo": true, "printf": true,
	"true": true, "false": true, ":": true, "test": true, "[": true, "export": true, "declare": true,
	"local": true, "readonly": true, "typeset": true, "unset": true, "set": true, "shift": true,
	"read": true, "exit": true, "return": true, "break": true, "continue": true, "wait": true,
	"type": true, "getopts": true, "let": true, "umask": true, "jobs": true, "times": true,
	"help": true, "logout": true, "suspend": true, "caller": true, "kill": true, "ulimit": true,
	"disown": true, "fg": true, "bg": true, "unalias": true, "history": true,
}

// parsedOpts is the result of parsing a wrapper's options.
type parsedOpts struct {
	opts    []optVal // in order
	cmd     int      // index in argv where the program starts; len(argv) = none
	assigns []Assign
	noExec  bool
	bad     string // an option that was not understood
}

type optVal struct {
	name  string // "u" or "unset"
	value string
	has   bool
}

// parseWrapper parses argv[1:] of a wrapper by spec.
func parseWrapper(spec wrapSpec, argv []string, dynamic func(int) bool) parsedOpts {
	var p parsedOpts
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if dynamic(i) {
			// A word only known at run time where an option may stand:
			// it may be an option, an assignment or the program.
			p.bad = a
			p.cmd = i
			return p
		}
		if a == "--" {
			i++
			break
		}
		if a == "--help" || a == "--version" {
			p.noExec = true // prints and exits
			p.cmd = len(argv)
			return p
		}
		if a == "-" && spec.dashIsI {
			p.opts = append(p.opts, optVal{name: "i"}) // env - is env -i
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, val, has := strings.Cut(a[2:], "=")
			full, takes, ok := matchLong(spec, name)
			if !ok && spec.loose {
				continue // best effort: an unknown long option is a flag
			}
			if !ok {
				p.bad = a
				p.cmd = i
				return p
			}
			ov := optVal{name: full, value: val, has: has}
			if takes && !has {
				if i+1 >= len(argv) {
					p.bad = a
					p.cmd = len(argv)
					return p
				}
				i++
				ov.value, ov.has = argv[i], true
			}
			p.opts = append(p.opts, ov)
			if contains(spec.noExecL, full) {
				p.noExec = true
			}
			continue
		}
		if len(a) > 1 && a[0] == '-' {
			if spec.numeric && isNumber(a[1:]) {
				p.opts = append(p.opts, optVal{name: "n", value: a[1:], has: true})
				continue
			}
			for k := 1; k < len(a); k++ {
				ch := a[k]
				switch {
				case strings.IndexByte(spec.shortV, ch) >= 0:
					ov := optVal{name: string(ch), has: true}
					if k+1 < len(a) {
						ov.value = a[k+1:]
					} else if i+1 < len(argv) {
						i++
						ov.value = argv[i]
					} else {
						p.bad = a
						p.cmd = len(argv)
						return p
					}
					p.opts = append(p.opts, ov)
					k = len(a)
				case strings.IndexByte(spec.shortOpt, ch) >= 0:
					p.opts = append(p.opts, optVal{name: string(ch), value: a[k+1:], has: k+1 < len(a)})
					k = len(a)
				case strings.IndexByte(spec.short, ch) >= 0 || spec.loose:
					p.opts = append(p.opts, optVal{name: string(ch)})
				default:
					p.bad = a
					p.cmd = i
					return p
				}
				if strings.IndexByte(spec.noExec, ch) >= 0 {
					p.noExec = true
				}
			}
			continue
		}
		break
	}
	if spec.assigns {
		for ; i < len(argv); i++ {
			name, val, ok := strings.Cut(argv[i], "=")
			if !ok || !isName(name) {
				break
			}
			p.assigns = append(p.assigns, Assign{Name: name, Value: val})
		}
	}
	p.cmd = min(i+spec.operands, len(argv))
	return p
}

func matchLong(spec wrapSpec, name string) (full string, takes, ok bool) {
	// GNU getopt_long accepts any unambiguous prefix of a long option.
	var found []string
	var foundTakes []bool
	for _, l := range spec.long {
		if l == name {
			return l, false, true
		}
		if strings.HasPrefix(l, name) {
			found, foundTakes = append(found, l), append(foundTakes, false)
		}
	}
	for _, l := range spec.longV {
		if l == name {
			return l, true, true
		}
		if strings.HasPrefix(l, name) {
			found, foundTakes = append(found, l), append(foundTakes, true)
		}
	}
	if len(found) == 1 && name != "" {
		return found[0], foundTakes[0], true
	}
	return "", false, false
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// unwrap reads the program a known wrapper starts.
func (r *reader) unwrap(idx int, spec wrapSpec, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	base := baseName(argv[0])
	if base == "busybox" {
		// busybox APPLET ARGS…: the applet is the program.
		if len(argv) > 1 && strings.HasPrefix(argv[1], "-") {
			if argv[1] != "--help" && argv[1] != "--list" && argv[1] != "--list-full" {
				r.undecidable(idx, "unknown option %s of busybox", argv[1])
			}
			return
		}
		r.inner(idx, 1, s, innerOpts{})
		return
	}
	p := parseWrapper(spec, argv, func(i int) bool { return isDynamic(c, i) })
	if p.bad != "" {
		if isDynamic(c, p.cmd) {
			r.undecidable(idx, "a word only known at run time where %s expects an option or a program", base)
		} else {
			r.undecidable(idx, "unknown or incomplete option %s of %s", p.bad, base)
		}
		return
	}
	if p.noExec {
		return
	}
	o := innerOpts{assigns: p.assigns, background: spec.bg, fromInput: spec.input}
	// setsid forks and returns at once (the program keeps running) when
	// its caller leads a process group, which only the running shell
	// knows; -w waits for the program.
	setsidBg := base == "setsid"
	for _, ov := range p.opts {
		switch base + " " + ov.name {
		case "setsid w", "setsid wait":
			setsidBg = false
		case "env S", "env split-string":
			// env -S splits its value into words that come before the
			// rest of the operands.
			words, ok := splitEnvS(ov.value)
			if !ok {
				r.undecidable(idx, "env -S string that cannot be split statically")
				return
			}
			r.envSplit(idx, words, p, s)
			return
		case "env C", "env chdir", "sudo D", "sudo chdir":
			o.dir = ov.value
		case "setsid f", "setsid fork", "sudo b", "sudo background":
			o.background = true
		case "time o", "time output":
			c.Redirects = append(append([]Redirect(nil), c.Redirects...), Redirect{Op: "-o", Path: ov.value, Write: true})
		case "sudo i", "sudo login", "sudo s", "sudo shell", "doas s":
			if p.cmd >= len(argv) {
				// No command: an interactive shell whose commands come
				// from the terminal.
				r.undecidable(idx, "%s starts an interactive shell", base)
				return
			}
		case "chroot userspec", "sudo u", "sudo user", "sudo g", "sudo group", "doas u":
		}
	}
	if base == "env" || base == "sudo" {
		for _, a := range p.assigns {
			if a.Name == "IFS" {
				r.undecidable(idx, "assigning IFS changes how later words are split")
			}
		}
	}
	if p.cmd >= len(argv) {
		switch {
		case spec.emptyRuns != nil:
			r.inner(idx, 0, s, innerOpts{argv: append([]string(nil), spec.emptyRuns...), fromInput: true})
		case base == "exec" || base == "command":
			// `exec 3<> f` only sets up descriptors of the shell.
			c.Builtin = true
		}
		return
	}
	o.sameShell = base == "command" && !strings.Contains(argv[0], "/")
	o.background = o.background || setsidBg
	r.inner(idx, p.cmd, s, o)
}

// envSplit handles env -S: the split words stand where the option stood,
// before the remaining operands, and are read as env operands again
// (assignments, then the program).
func (r *reader) envSplit(idx int, words []string, p parsedOpts, s scope) {
	c := &r.out[idx]
	argv := append(append([]string{c.Argv[0]}, words...), c.Argv[p.cmd:]...)
	shift := 1 + len(words) - p.cmd
	var dyn []int
	for _, d := range c.Dynamic {
		if d >= p.cmd {
			dyn = append(dyn, d+shift)
		}
	}
	q := parseWrapper(wrappers["env"], argv, func(i int) bool {
		for _, d := range dyn {
			if d == i {
				return true
			}
		}
		return false
	})
	if q.bad != "" {
		r.undecidable(idx, "env -S string with an option or word that cannot be read statically: %s", q.bad)
		return
	}
	if q.noExec || q.cmd >= len(argv) {
		return
	}
	var inner []int
	for _, d := range dyn {
		if d >= q.cmd {
			inner = append(inner, d-q.cmd)
		}
	}
	r.inner(idx, 0, s, innerOpts{argv: argv[q.cmd:], dynamic: inner, assigns: append(p.assigns, q.assigns...)})
}

// splitEnvS splits an env -S string: whitespace separates words, single and
// double quotes group, backslash escapes; ${VAR} and \c are not static.
func splitEnvS(v string) ([]string, bool) {
	var words []string
	var b strings.Builder
	inWord := false
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		case ch == '\'':
			j := strings.IndexByte(v[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			b.WriteString(v[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			j := strings.IndexByte(v[i+1:], '"')
			if j < 0 {
				return nil, false
			}
			in := v[i+1 : i+1+j]
			if strings.ContainsAny(in, "\\$") {
				return nil, false
			}
			b.WriteString(in)
			i += j + 1
			inWord = true
		case ch == '\\' || ch == '$' || ch == '#' && !inWord:
			return nil, false
		default:
			b.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	return words, true
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// shellArgs reads `sh -c STRING`: the string is a script.
func (r *reader) shellArgs(idx int, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	name := baseName(argv[0])
	d, known := DialectOf(name)
	if !known {
		r.undecidable(idx, "%s is a shell whose language this reader does not read", name)
		return
	}
	dashC, stdin := false, false
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if isDynamic(c, i) {
			if dashC {
				r.undecidable(idx, "%s -c of a string only known at run time", name)
			} else {
				r.undecidable(idx, "a word only known at run time among the options of %s", name)
			}
			return
		}
		if a == "--" || a == "-" {
			i++
			break
		}
		if strings.HasPrefix(a, "--") {
			switch a {
			case "--rcfile", "--init-file":
				// The file is a script read before anything else.
				r.undecidable(idx, "%s %s runs the commands of a file, which are only known at run time", name, a)
				return
			case "--debugger":
				r.undecidable(idx, "%s --debugger runs the debugger's startup file", name)
				return
			}
			continue
		}
		if len(a) > 1 && (a[0] == '-' || a[0] == '+') {
			for k := 1; k < len(a); k++ {
				switch a[k] {
				case 'c':
					dashC = true
				case 's':
					stdin = true
				case 'i':
					// An interactive shell runs its startup file ($ENV,
					// ~/.bashrc) and expands its prompts (PS0, PS1, PS2).
					r.undecidable(idx, "%s -i runs a startup file and prompt strings, which are only known at run time", name)
					return
				case 'o', 'O':
					i++ // -o OPTION takes the next word
				}
			}
			continue
		}
		break
	}
	if dashC {
		if i >= len(argv) {
			r.undecidable(idx, "%s -c without a command string", name)
			return
		}
		if isDynamic(c, i) {
			r.undecidable(idx, "%s -c of a string only known at run time", name)
			return
		}
		r.scriptIn(idx, argv[i], s, d)
		return
	}
	if i < len(argv) && !stdin {
		r.undecidable(idx, "%s runs the commands of a script file, which are only known at run time", name)
		return
	}
	// The shell reads its program from its input: a here-document or
	// here-string, or a literal that an earlier pipeline stage prints, is
	// a script this reader can read; anything else is code handed to it.
	if body, ok := r.literalInput(idx); ok {
		r.scriptIn(idx, body, s, d)
		return
	}
	r.undecidable(idx, "%s reads the commands it runs from its input, which are only known at run time", name)
}

// literalInput is the text the command at idx reads on its standard input
// when the string itself holds it: the last here-document or here-string
// (which is what the program reads), or else the output of a single earlier
// pipeline stage that is `cat` of a here-document or `echo` of literal words.
func (r *reader) literalInput(idx int) (string, bool) {
	c := &r.out[idx]
	for k := len(c.Redirects) - 1; k >= 0; k-- {
		rd := c.Redirects[k]
		if rd.Fd != "" && rd.Fd != "0" {
			continue
		}
		switch rd.Op {
		case "<<", "<<-", "<<<":
			return rd.Body, !rd.Dynamic
		case "<", "<>", "<&":
			return "", false
		}
	}
	if len(c.Upstream) != 1 {
		return "", false
	}
	u := &r.out[c.Upstream[0]]
	if u.Undecidable != "" || u.Risk != "" || len(u.Dynamic) > 0 || u.Function || len(u.Argv) == 0 || u.Parent != c.Parent {
		return "", false
	}
	for _, rd := range u.Redirects {
		if rd.Fd == "" || rd.Fd == "1" {
			if rd.Write || rd.Op == ">&" {
				return "", false // its output goes elsewhere
			}
		}
	}
	switch {
	case u.Argv[0] == "cat" && len(u.Argv) == 1:
		for k := len(u.Redirects) - 1; k >= 0; k-- {
			rd := u.Redirects[k]
			if (rd.Fd == "" || rd.Fd == "0") && (rd.Op == "<<" || rd.Op == "<<-" || rd.Op == "<<<") && !rd.Dynamic {
				return rd.Body, true
			}
		}
	case u.Argv[0] == "echo" && u.Builtin:
		words := u.Argv[1:]
		for _, w := range words {
			if strings.HasPrefix(w, "-") || strings.ContainsRune(w, '\\') {
				return "", false // options and escapes differ between echos
			}
		}
		return strings.Join(words, " ") + "\n", true
	case u.Argv[0] == "printf" && u.Builtin && len(u.Argv) == 2:
		if f := u.Argv[1]; !strings.ContainsAny(f, "%\\") && !strings.HasPrefix(f, "-") {
			return f, true // a format without conversions or escapes prints itself
		}
	}
	return "", false
}

// findExec reads the programs find runs for -exec, -execdir, -ok, -okdir,
// and the files -fprint, -fprint0, -fprintf and -fls write.
func (r *reader) findExec(idx int, s scope) {
	argv := r.out[idx].Argv
	for i := 1; i < len(argv); i++ {
		switch argv[i] {
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(argv) {
				c := &r.out[idx]
				c.Redirects = append(append([]Redirect(nil), c.Redirects...),
					Redirect{Op: argv[i], Path: argv[i+1], Write: true, Dynamic: isDynamic(c, i+1)})
				i++
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(argv) && argv[end] != ";" && !(argv[end] == "+" && argv[end-1] == "{}") {
				end++
			}
			if i+1 < end {
				r.inner(idx, i+1, s, innerOpts{end: end, fromInput: true})
			}
			i = end
		case "-delete":
			// find removes what it finds, as rm -r of its starting
			// points would: where rm is not allowed, neither is this.
			r.findDeletes(idx, s)
			argv = r.out[idx].Argv
		}
	}
}

// findDeletes adds the removal find -delete does as the command
// `rm -r -f -- START…`, so that a policy decides it as the rm it is.
func (r *reader) findDeletes(idx int, s scope) {
	c := &r.out[idx]
	argv := []string{"rm", "-r", "-f", "--"}
	var dyn []int
	for k := 1; k < len(c.Argv); k++ {
		a := c.Argv[k]
		if a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O") {
			continue
		}
		if a == "-D" {
			k++
			continue
		}
		if strings.HasPrefix(a, "-") && !isDynamic(c, k) || a == "(" || a == "!" {
			break
		}
		if isDynamic(c, k) {
			dyn = append(dyn, len(argv))
		}
		argv = append(argv, a)
	}
	if len(argv) == 4 {
		argv = append(argv, ".")
	}
	if j := r.inner(idx, 0, s, innerOpts{argv: argv, dynamic: dyn}); j >= 0 {
		// It removes only what find matches below the starting points,
		// not the starting points: the files are find's to decide.
		r.out[j].Redirects = r.out[idx].Redirects
	}
}

// watch runs its operands joined by spaces through sh -c, unless -x.
func (r *reader) watch(idx int, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	exec := false
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		switch {
		case a == "-x" || a == "--exec":
			exec = true
		case a == "-n" || a == "--interval" || a == "-q" || a == "--equexit":
			i++
		case strings.HasPrefix(a, "--"):
		default:
			for k := 1; k < len(a); k++ {
				if a[k] == 'x' {
					exec = true
				}
				if a[k] == 'n' || a[k] == 'q' {
					if k == len(a)-1 {
						i++
					}
					break
				}
			}
		}
	}
	if i >= len(argv) {
		return
	}
	if exec {
		r.inner(idx, i, s, innerOpts{})
		return
	}
	for _, d := range c.Dynamic {
		if d >= i {
			r.undecidable(idx, "watch runs a command only known at run time")
			return
		}
	}
	r.script(idx, strings.Join(argv[i:], " "), s)
}

// dashC reads `flock … -c CMD`, `su -c CMD`, `runuser -c CMD`, `script -c
// CMD`: the command is a shell string.
// suSpec and scriptSpec are the options of util-linux su and script.
// Both take options anywhere among their operands (getopt permutes them),
// so `su root -mc CMD` and `script -qc CMD f` run CMD.
var (
	suSpec = wrapSpec{short: "lmpfP", shortV: "cCgGsw", long: []string{"login", "preserve-environment", "fast", "pty", "help", "version"},
		longV: []string{"command", "session-command", "group", "supp-group", "shell", "whitelist-environment"}}
	scriptSpec = wrapSpec{short: "aefqh", shortV: "cEIOBTmo", shortOpt: "t", long: []string{"append", "return", "flush", "force", "quiet", "help", "version"},
		longV: []string{"command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit", "timing"}}
)

// parsePermuted parses options placed anywhere among the operands, as GNU
// getopt does by default; the operands are returned in order.
func parsePermuted(spec wrapSpec, argv []string, dynamic func(int) bool) (opts []optVal, operands []string, bad string) {
	off := 0
	rest := argv
	for {
		p := parseWrapper(spec, rest, func(i int) bool { return dynamic(i + off) })
		opts = append(opts, p.opts...)
		if p.bad != "" {
			return opts, operands, p.bad
		}
		if p.cmd >= len(rest) {
			return opts, operands, ""
		}
		if k := p.cmd - 1; k >= 1 && rest[k] == "--" {
			return opts, append(operands, rest[p.cmd:]...), ""
		}
		operands = append(operands, rest[p.cmd])
		off += p.cmd
		rest = append([]string{argv[0]}, rest[p.cmd+1:]...)
	}
}

// suScript reads su and script: the command of -c (--command,
// --session-command) is a script for a shell known only at run time;
// without one they start an interactive shell that reads its input.
func (r *reader) suScript(idx int, s scope) {
	c := &r.out[idx]
	name := baseName(c.Argv[0])
	spec := suSpec
	if name == "script" {
		spec = scriptSpec
	}
	opts, _, bad := parsePermuted(spec, c.Argv, func(i int) bool { return isDynamic(c, i) })
	if bad != "" {
		r.undecidable(idx, "unknown or incomplete option %s of %s", bad, name)
		return
	}
	cmd, has := "", false
	for _, o := range opts {
		switch o.name {
		case "help", "version":
			return
		case "s", "shell":
			r.undecidable(idx, "%s -s names the shell it runs", name)
			return
		case "c", "C", "command", "session-command":
			cmd, has = o.value, true
		}
	}
	if !has {
		r.undecidable(idx, "%s without -c starts a shell that reads the commands it runs from its input", name)
		return
	}
	for k, a := range c.Argv {
		if k > 0 && isDynamic(c, k) && strings.Contains(a, cmd) {
			r.undecidable(idx, "%s -c of a string only known at run time", name)
			return
		}
	}
	r.script(idx, cmd, s)
}

func (r *reader) dashC(idx int, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	if b := baseName(argv[0]); b == "su" || b == "script" {
		r.suScript(idx, s)
		return
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		var cmd string
		at := -1
		switch {
		case a == "-c" || a == "--command":
			if i+1 < len(argv) {
				cmd, at = argv[i+1], i+1
			}
		case strings.HasPrefix(a, "--command="):
			cmd, at = strings.TrimPrefix(a, "--command="), i
		case strings.HasPrefix(a, "-c") && !strings.HasPrefix(a, "--"):
			cmd, at = a[2:], i
		}
		if at < 0 {
			continue
		}
		if isDynamic(c, at) {
			r.undecidable(idx, "%s -c of a string only known at run time", baseName(argv[0]))
			return
		}
		r.script(idx, cmd, s)
		return
	}
	if baseName(argv[0]) == "runuser" {
		// runuser -u USER [--] PROGRAM ARGS…
		p := parseWrapper(wrapSpec{short: "lmpfP", shortV: "ugGsw", long: []string{"login", "preserve-environment", "pty"},
			longV: []string{"user", "group", "supp-group", "shell", "whitelist-environment"}}, argv,
			func(i int) bool { return isDynamic(c, i) })
		if p.bad != "" {
			r.undecidable(idx, "unknown or incomplete option %s of runuser", p.bad)
			return
		}
		if p.cmd < len(argv) {
			for _, o := range p.opts {
				if o.name == "u" || o.name == "user" {
					r.inner(idx, p.cmd, s, innerOpts{})
					return
				}
			}
		}
		return
	}
	if baseName(argv[0]) == "flock" {
		// flock [options] FILE PROGRAM ARGS…
		i := 1
		for i < len(argv) && strings.HasPrefix(argv[i], "-") {
			if argv[i] == "-w" || argv[i] == "--timeout" || argv[i] == "-E" || argv[i] == "--conflict-exit-code" {
				i++
			}
			i++
		}
		if i+1 < len(argv) && !isNumber(argv[i]) {
			r.inner(idx, i+1, s, innerOpts{})
		}
	}
}

// riskyBuiltin says why a builtin changes what later names run.
func riskyBuiltin(argv []string) string {
	switch argv[0] {
	case "enable":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") && strings.ContainsAny(a, "f") {
				return "enable -f loads a shared object into the shell"
			}
		}
	case "hash":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") && strings.Contains(a, "p") {
				return "hash -p changes which file a program name runs"
			}
		}
	case "fc":
		return "fc runs commands from the history"
	case "shopt":
		for _, a := range argv[1:] {
			if a == "expand_aliases" {
				return "expand_aliases lets aliases change what later names run"
			}
		}
	case "bind":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") && strings.Contains(a, "x") {
				return "bind -x runs a command"
			}
		}
	case "complete", "compgen":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") && strings.ContainsAny(a, "CF") {
				return argv[0] + " -C/-F runs a command or function"
			}
		}
	case "mapfile", "readarray":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "-") && strings.Contains(a, "C") {
				return argv[0] + " -C runs a callback"
			}
		}
	}
	return ""
}

// otherRunners reads programs that run a command in their own way:
// `capsh … -- ARGS` passes ARGS to bash, `gdb --args PROG …`, `sg GROUP
// [-c] CMD`, `hyperfine` whose operands and --prepare/--setup/--cleanup
// values are shell strings.
func (r *reader) otherRunners(idx int, base string, s scope) {
	c := &r.out[idx]
	argv := c.Argv
	switch base {
	case "capsh":
		for i := 1; i < len(argv); i++ {
			if argv[i] == "--" {
				r.inner(idx, 0, s, innerOpts{argv: append([]string{"/bin/bash"}, argv[i+1:]...), dynamic: shiftDyn(c, i+1, 1)})
				return
			}
		}
	case "gdb":
		for i := 1; i < len(argv); i++ {
			a := strings.TrimPrefix(argv[i], "-")
			if argv[i] == "--args" || argv[i] == "-args" {
				r.inner(idx, i+1, s, innerOpts{})
				return
			}
			// gdb takes -x, -ex, --command=… with one dash or two; its
			// commands include shell and python.
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
			switch name {
			case "x", "ex", "ix", "iex", "command", "eval-command", "init-command", "init-eval-command":
				r.undecidable(idx, "gdb runs debugger commands (shell, python) that this reader does not read")
				return
			}
		}
		if len(r.out[idx].Upstream) > 0 {
			r.undecidable(idx, "gdb reads debugger commands (shell, python) from its input")
		}
	case "sg":
		if len(argv) < 3 {
			return
		}
		if argv[2] == "-c" && len(argv) > 3 {
			if isDynamic(c, 3) {
				r.undecidable(idx, "sg -c of a string only known at run time")
				return
			}
			r.script(idx, argv[3], s)
			return
		}
		for d := 2; d < len(argv); d++ {
			if isDynamic(c, d) {
				r.undecidable(idx, "sg runs a command only known at run time")
				return
			}
		}
		r.script(idx, strings.Join(argv[2:], " "), s)
	case "hyperfine":
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			script := false
			switch {
			case a == "-p" || a == "--prepare" || a == "-s" || a == "--setup" || a == "-c" || a == "--cleanup" ||
				a == "--conclude":
				i++
				script = true
			case strings.HasPrefix(a, "--prepare=") || strings.HasPrefix(a, "--setup=") ||
				strings.HasPrefix(a, "--cleanup=") || strings.HasPrefix(a, "--conclude="):
				_, v, _ := strings.Cut(a, "=")
				r.hyperfineScript(idx, i, v, s)
				continue
			case strings.HasPrefix(a, "-"):
				switch a {
				case "-w", "--warmup", "-r", "--runs", "-m", "--min-runs", "-M", "--max-runs", "-n", "--command-name",
					"-S", "--shell", "--export-json", "--export-markdown", "--export-csv", "--style", "-u", "--time-unit",
					"-L", "--parameter-list", "-P", "--parameter-scan", "-D", "--parameter-step-size", "--output", "--input":
					i++
				}
				continue
			default:
				script = true
			}
			if script && i < len(argv) {
				r.hyperfineScript(idx, i, argv[i], s)
			}
		}
	}
}

func (r *reader) hyperfineScript(idx, i int, v string, s scope) {
	if isDynamic(&r.out[idx], i) {
		r.undecidable(idx, "hyperfine runs a command only known at run time")
		return
	}
	r.script(idx, v, s)
}

// shiftDyn returns c's dynamic indexes from `from` on, moved to start at to.
func shiftDyn(c *Command, from, to int) []int {
	var out []int
	for _, d := range c.Dynamic {
		if d >= from {
			out = append(out, d-from+to)
		}
	}
	return out
}
