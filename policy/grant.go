package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Grant is a person's "allow always": it lifts an escalation for exactly one
// call — one argv, or one tool with exactly these arguments. It never lifts
// a denial.
type Grant struct {
	Kind    string         `json:"kind"` // "argv" or "tool"
	Argv    []string       `json:"argv,omitempty"`
	Tool    string         `json:"tool,omitempty"`
	Args    map[string]any `json:"args,omitempty"`
	Created time.Time      `json:"created"`
}

// Call is a call a person was asked about: an argv, or a tool name with its
// arguments.
type Call struct {
	Argv []string
	Tool string
	Args map[string]any
}

// String shows the grant exactly as it will be stored, for the person to
// read before saving it.
func (g Grant) String() string {
	switch g.Kind {
	case "argv":
		b, _ := json.Marshal(g.Argv)
		return "run exactly " + string(b)
	case "tool":
		b, err := json.Marshal(g.Args)
		if err != nil || g.Args == nil {
			b = []byte("{}")
		}
		return fmt.Sprintf("call %s with exactly %s", g.Tool, b)
	}
	return "invalid grant"
}

// GrantFor returns the narrowest grant that covers exactly call: the whole
// argv, or the tool name with all of its arguments. It refuses calls whose
// meaning is code rather than a command line — an interpreter or shell with
// inline code or reading a program from standard input (`python -c`,
// `bash -c`, `node -e`, `sh`, `awk '…'`), or a wrapper, whose wrapped
// program should be granted instead — because "always" for them would mean
// "anything".
func GrantFor(call Call, now time.Time) (Grant, error) {
	var g Grant
	switch {
	case len(call.Argv) > 0 && call.Tool != "":
		return g, errors.New("a grant covers an argv or a tool call, not both")
	case len(call.Argv) > 0:
		g = Grant{Kind: "argv", Argv: slices.Clone(call.Argv), Created: now.UTC()}
	case call.Tool != "":
		args, err := cloneJSON(call.Args, 0)
		if err != nil {
			return Grant{}, fmt.Errorf("tool arguments: %w", err)
		}
		m, _ := args.(map[string]any)
		g = Grant{Kind: "tool", Tool: call.Tool, Args: m, Created: now.UTC()}
	default:
		return g, errors.New("nothing to grant: the call has no argv and no tool")
	}
	if err := ValidateGrant(g); err != nil {
		return Grant{}, err
	}
	return g, nil
}

// ValidateGrant reports why g may not be used: malformed, or too broad by
// GrantFor's rules. A Checker ignores grants that fail it, so a grants file
// edited into something broader has no effect.
func ValidateGrant(g Grant) error {
	switch g.Kind {
	case "argv":
		if len(g.Argv) == 0 || g.Argv[0] == "" {
			return errors.New("an argv grant needs a program")
		}
		if g.Tool != "" || g.Args != nil {
			return errors.New("an argv grant has no tool")
		}
		for _, a := range g.Argv {
			if strings.ContainsRune(a, 0) {
				return errors.New("an argument holds a NUL byte")
			}
		}
		if why := grantRefusal(g.Argv); why != "" {
			return errors.New(why)
		}
	case "tool":
		if g.Tool == "" || strings.ContainsAny(g.Tool, "*") || strings.ContainsFunc(g.Tool, isControl) {
			return errors.New("a tool grant names exactly one tool")
		}
		if len(g.Argv) > 0 {
			return errors.New("a tool grant has no argv")
		}
		if _, err := cloneJSON(g.Args, 0); err != nil {
			return fmt.Errorf("tool arguments: %w", err)
		}
	default:
		return fmt.Errorf("unknown grant kind %q (want argv or tool)", g.Kind)
	}
	return nil
}

// interpreters run code given as an argument or on standard input.
var interpreters = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "fish": true, "csh": true,
	"tcsh": true, "ash": true, "busybox": true, "python": true, "python2": true, "python3": true, "pypy": true,
	"pypy3": true, "node": true, "nodejs": true, "deno": true, "bun": true, "perl": true, "ruby": true,
	"php": true, "lua": true, "luajit": true, "tclsh": true, "wish": true, "Rscript": true, "R": true,
	"osascript": true, "pwsh": true, "powershell": true, "awk": true, "gawk": true, "mawk": true, "nawk": true,
	"irb": true, "jshell": true, "groovy": true, "scala": true, "julia": true, "expect": true, "guile": true,
}

// codeFlags are interpreter options whose value is program text.
var codeFlags = map[string]bool{
	"-c": true, "-e": true, "-E": true, "--eval": true, "-p": true, "--print": true, "-r": true,
	"--command": true, "-Command": true, "-EncodedCommand": true, "-i": true, "--interactive": true, "-": true,
}

// wrapperNames start the program named in their arguments; the wrapped
// program is what a grant must name.
var wrapperNames = map[string]bool{
	"env": true, "sudo": true, "doas": true, "xargs": true, "nohup": true, "nice": true, "timeout": true,
	"stdbuf": true, "command": true, "exec": true, "setsid": true, "su": true, "runuser": true, "chroot": true,
	"unshare": true, "nsenter": true, "flock": true, "watch": true, "script": true, "strace": true,
	"ltrace": true, "time": true, "ionice": true, "taskset": true, "eval": true, "source": true, ".": true,
	"parallel": true, "builtin": true, "coproc": true, "trap": true,
}

// grantRefusal says why argv may not be granted "always", "" if it may.
func grantRefusal(argv []string) string {
	if len(argv) == 0 {
		return "nothing to grant"
	}
	base := baseName(argv[0])
	if wrapperNames[base] {
		return fmt.Sprintf("%s starts another program; grant that program instead", base)
	}
	if !interpreters[base] && !strings.HasPrefix(base, "python") {
		return ""
	}
	if base == "awk" || strings.HasSuffix(base, "awk") {
		return fmt.Sprintf("%s runs the program text in its arguments; allow it once instead", base)
	}
	if len(argv) == 1 {
		return fmt.Sprintf("%s reads a program from standard input; allow it once instead", base)
	}
	for _, a := range argv[1:] {
		if codeFlags[a] || strings.HasPrefix(a, "--eval=") || strings.HasPrefix(a, "--print=") {
			return fmt.Sprintf("%s %s runs inline code; allow it once instead", base, a)
		}
		// Clustered short options of a shell: -lc, -ec, -xc.
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], "ceEp") {
			return fmt.Sprintf("%s %s runs inline code; allow it once instead", base, a)
		}
	}
	return ""
}

// cloneJSON deep-copies a JSON value (as encoding/json decodes it, plus Go
// numbers), refusing anything else so grants stay comparable.
func cloneJSON(v any, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("nested too deeply")
	}
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case json.Number:
		f, ok := exactNumber(x)
		if !ok {
			return nil, fmt.Errorf("the number %.40s is not one a grant can hold exactly (it would be kept as its float64 neighbour); allow the call once", string(x))
		}
		return f, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("not a JSON number")
		}
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := cloneJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			c, err := cloneJSON(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %T is not a JSON value", v)
}

// jsonEqual compares two JSON values, numbers by value.
func jsonEqual(a, b any, depth int) bool {
	if depth > 64 {
		return false
	}
	na, aNum := number(a)
	nb, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && na == nb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i], depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		return exactNumber(x)
	}
	return 0, false
}

// exactNumber reads a number as written (the gateway forwards it so) into
// the float64 a grant keeps, only when that float64 is the number: its
// shortest spelling has the same decimal value as n. Two numbers a server
// reads apart (12345678901234567 and 12345678901234568, which float64
// rounds alike) then never share one grant; 0.1 stays grantable, since
// "0.1" is how its float64 is spelled.
func exactNumber(n json.Number) (float64, bool) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	k1, ok1 := decimalKey(string(n))
	k2, ok2 := decimalKey(strconv.FormatFloat(f, 'g', -1, 64))
	return f, ok1 && ok2 && k1 == k2
}

// decimalKey is the exact decimal value of a JSON number as text: sign,
// significant digits and power of ten ("-0" is "0"), computed on the text
// alone so that no exponent costs arithmetic. An exponent of more than 9
// digits is refused.
func decimalKey(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, "0"
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], strings.TrimPrefix(s[i+1:], "+")
	}
	if len(strings.TrimPrefix(exp, "-")) > 9 {
		return "", false
	}
	e, err := strconv.Atoi(exp)
	if err != nil {
		return "", false
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	e -= len(frac)
	digits = strings.TrimLeft(digits, "0")
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		e++
	}
	if digits == "" {
		return "0", true
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + digits + "e" + strconv.Itoa(e), true
}

// WithGrants returns a copy of p whose escalations are lifted for exactly
// the calls in gs. Grants that ValidateGrant refuses have no effect.
func (p *Policy) WithGrants(gs []Grant) *Policy {
	q := *p
	// Refused grants stay in the list (so "grant[i]" keeps naming the i-th
	// grant given) but the Checker never uses them.
	q.grants = append(slices.Clone(p.grants), gs...)
	// The policies p was narrowed from get them too, so the order of
	// WithGrants and Narrow does not matter.
	if p.within != nil {
		q.within = p.within.WithGrants(gs)
	}
	return &q
}

func (c *Checker) argvGrant(argv []string) (string, bool) {
	for i := range c.grants {
		g := &c.grants[i]
		if c.grantOK[i] && g.Kind == "argv" && slices.Equal(g.Argv, argv) {
			return c.grantRules[i], true
		}
	}
	return "", false
}

func (c *Checker) toolGrant(name string, args map[string]any) (int, bool) {
	for i := range c.grants {
		g := &c.grants[i]
		if !c.grantOK[i] || g.Kind != "tool" || g.Tool != name {
			continue
		}
		var a, b any = map[string]any(g.Args), map[string]any(args)
		if g.Args == nil {
			a = map[string]any{}
		}
		if args == nil {
			b = map[string]any{}
		}
		if jsonEqual(a, b, 0) {
			return i, true
		}
	}
	return 0, false
}

// Interpreter reports whether prog (a bare name or a path) is a shell or a
// language interpreter: allowing it allows whatever code it is given.
func Interpreter(prog string) bool {
	base := baseName(prog)
	return interpreters[base] || strings.HasPrefix(base, "python")
}
