package policy

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/airlock-run/airlock/policy/protected"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/netrule"
)

// MaxPolicySize bounds a policy document; a policy is a page of rules, not a
// data file.
const MaxPolicySize = 1 << 20

// Parse reads a policy document (YAML, or JSON, which is read as YAML) and
// validates it strictly: unknown keys, duplicate keys, wrong types, bad globs,
// sizes, durations and network entries are errors. Sections the document does
// not give get the workspace profile's values, so `net: {}` still means no
// network. Every error is errs.Invalid and reads "FILE:LINE:COL: field:
// message".
func Parse(filename string, data []byte) (*Policy, error) {
	p, err := parse(filename, data)
	if err != nil {
		return nil, err
	}
	fillDefaults(p)
	return p, nil
}

// ParseNarrowing reads a policy document meant for Narrow: sections it does
// not give stay unset, so they leave the base policy's values alone instead
// of resetting them to the workspace defaults.
func ParseNarrowing(filename string, data []byte) (*Policy, error) {
	return parse(filename, data)
}

func fillDefaults(p *Policy) {
	w := Workspace()
	if p.Isolation == "" {
		p.Isolation = w.Isolation
	}
	if p.FS.Read == nil {
		p.FS.Read = w.FS.Read
	}
	if p.FS.Write == nil {
		p.FS.Write = w.FS.Write
	}
	if p.Net.Allow == nil {
		p.Net.Allow = []string{}
	}
	if p.Net.DNS == "" {
		p.Net.DNS = w.Net.DNS
	}
	if p.Env.Allow == nil {
		p.Env.Allow = []string{}
	}
	d := DefaultLimits()
	if p.Limits.Memory == 0 {
		p.Limits.Memory = d.Memory
	}
	if p.Limits.CPU == 0 {
		p.Limits.CPU = d.CPU
	}
	if p.Limits.Wall == 0 {
		p.Limits.Wall = d.Wall
	}
	if p.Limits.Pids == 0 {
		p.Limits.Pids = d.Pids
	}
	if p.Escalation.Timeout == 0 {
		p.Escalation.Timeout = DefaultEscalationTimeout
	}
}

// parseError is a validation failure at a place in the document.
type parseError struct {
	file      string
	line, col int
	field     string
	msg       string
}

func (e *parseError) Error() string {
	if e.field == "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.file, e.line, e.col, e.msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.file, e.line, e.col, e.field, e.msg)
}

func (e *parseError) ErrClass() errs.Class { return errs.Invalid }

type parser struct {
	file string
	err  *parseError
}

func (ps *parser) fail(n *yaml.Node, field, format string, a ...any) {
	if ps.err != nil {
		return
	}
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	ps.err = &parseError{file: ps.file, line: line, col: col, field: field, msg: fmt.Sprintf(format, a...)}
}

func parse(filename string, data []byte) (p *Policy, err error) {
	if filename == "" {
		filename = "policy"
	}
	ps := &parser{file: filename}
	defer func() {
		// yaml.v3 has panicked on hostile input before; a policy that
		// cannot be read is invalid, never a crash.
		if r := recover(); r != nil {
			p, err = nil, &parseError{file: filename, line: 1, col: 1, msg: fmt.Sprintf("unreadable document (%v)", r)}
		}
	}()
	if len(data) > MaxPolicySize {
		return nil, &parseError{file: filename, line: 1, col: 1, msg: fmt.Sprintf("document is larger than %d bytes", MaxPolicySize)}
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &parseError{file: filename, line: 1, col: 1, msg: "document contains a NUL byte"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return nil, &parseError{file: filename, line: 1, col: 1, msg: "policy is empty"}
		}
		return nil, yamlError(filename, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &parseError{file: filename, line: extra.Line, col: extra.Column, msg: "more than one YAML document"}
	} else if err.Error() != "EOF" {
		return nil, yamlError(filename, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) != 1 {
			return nil, &parseError{file: filename, line: 1, col: 1, msg: "policy is empty"}
		}
		root = root.Content[0]
	}
	p = &Policy{Source: filename}
	ps.policy(root, p)
	if ps.err == nil {
		checkSecrets(ps, root, p)
	}
	if ps.err != nil {
		return nil, ps.err
	}
	return p, nil
}

// yamlError turns a yaml.v3 syntax error ("yaml: line 3: ...") into the
// FILE:LINE:COL form.
func yamlError(file string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 1
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return &parseError{file: file, line: line, col: 1, msg: "not valid YAML or JSON: " + msg}
}

// mapping checks that n is a mapping without duplicate or unknown keys and
// calls fn for each entry in document order.
func (ps *parser) mapping(n *yaml.Node, field string, known []string, fn func(key string, k, v *yaml.Node)) {
	if ps.err != nil {
		return
	}
	if !ps.kind(n, field, yaml.MappingNode, "a mapping") {
		return
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content) && ps.err == nil; i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			ps.fail(k, field, "keys must be plain strings")
			return
		}
		if k.Value == "<<" && k.Tag == "!!merge" {
			ps.fail(k, field, "merge keys (<<) are not supported")
			return
		}
		if seen[k.Value] {
			ps.fail(k, join(field, k.Value), "duplicate key")
			return
		}
		seen[k.Value] = true
		if known != nil && !slices.Contains(known, k.Value) {
			ps.fail(k, join(field, k.Value), "unknown field (known: %s)", strings.Join(known, ", "))
			return
		}
		if v.Kind == yaml.AliasNode || k.Kind == yaml.AliasNode {
			ps.fail(v, join(field, k.Value), "aliases are not supported")
			return
		}
		fn(k.Value, k, v)
	}
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

var kindNames = map[yaml.Kind]string{
	yaml.DocumentNode: "a document", yaml.SequenceNode: "a list",
	yaml.MappingNode: "a mapping", yaml.ScalarNode: "a single value", yaml.AliasNode: "an alias",
}

func (ps *parser) kind(n *yaml.Node, field string, want yaml.Kind, wantName string) bool {
	if n.Kind == yaml.AliasNode {
		ps.fail(n, field, "aliases are not supported")
		return false
	}
	if n.Kind != want {
		ps.fail(n, field, "want %s, got %s", wantName, describe(n))
		return false
	}
	return true
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!null":
			return "nothing (null)"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		}
		return fmt.Sprintf("the string %q", n.Value)
	}
	return kindNames[n.Kind]
}

// str reads a scalar string. Numbers are accepted as their text only where
// the caller says so.
func (ps *parser) str(n *yaml.Node, field string, numbersOK bool) (string, bool) {
	if !ps.kind(n, field, yaml.ScalarNode, "a string") {
		return "", false
	}
	switch n.Tag {
	case "!!str":
	case "!!int", "!!float":
		if !numbersOK {
			ps.fail(n, field, "want a string, got a number (quote it)")
			return "", false
		}
	case "!!bool":
		// `allow: [true]` is the program true to its writer.
		ps.fail(n, field, "want a string, got the boolean %s (quote it: %q)", n.Value, n.Value)
		return "", false
	default:
		ps.fail(n, field, "want a string, got %s", describe(n))
		return "", false
	}
	if strings.ContainsFunc(n.Value, isControl) {
		ps.fail(n, field, "contains a control character")
		return "", false
	}
	return n.Value, true
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func (ps *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	if !ps.kind(n, field, yaml.ScalarNode, "true or false") {
		return false, false
	}
	if n.Tag != "!!bool" {
		ps.fail(n, field, "want true or false, got %s", describe(n))
		return false, false
	}
	return n.Value == "true" || n.Value == "True" || n.Value == "TRUE", true
}

// list reads a sequence of strings, checking each with check. A null value
// is an error: an empty list must be written [].
func (ps *parser) list(n *yaml.Node, field string, check func(s string) error) []string {
	if !ps.kind(n, field, yaml.SequenceNode, "a list") {
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := ps.str(e, f, false)
		if !ok {
			return nil
		}
		if check != nil {
			if err := check(s); err != nil {
				ps.fail(e, f, "%q: %v", s, err)
				return nil
			}
		}
		out = append(out, s)
	}
	return out
}

func (ps *parser) policy(n *yaml.Node, p *Policy) {
	ps.mapping(n, "", []string{"isolation", "fs", "net", "shell", "env", "tools", "limits", "escalation", "sandbox", "secrets", "models"}, func(key string, k, v *yaml.Node) {
		switch key {
		case "isolation":
			if s, ok := ps.str(v, key, false); ok {
				if s != "auto" && s != "none" && s != "gvisor" {
					ps.fail(v, key, "%q: want auto, none or gvisor", s)
				}
				p.Isolation = s
			}
		case "fs":
			ps.mapping(v, key, []string{"read", "write", "unprotect", "unattended_build"}, func(key string, k, v *yaml.Node) {
				switch key {
				case "unattended_build":
					p.FS.UnattendedBuild, _ = ps.boolean(v, "fs.unattended_build")
					return
				case "unprotect":
					l := ps.list(v, "fs.unprotect", func(s string) error { return protected.CheckUnprotect([]string{s}) })
					if l == nil {
						l = []string{}
					}
					p.FS.Unprotect = l
					return
				}
				l := ps.list(v, "fs."+key, checkFSEntry)
				if l == nil {
					return
				}
				if key == "read" {
					p.FS.Read = l
				} else {
					p.FS.Write = l
				}
			})
		case "net":
			ps.net(v, p)
		case "secrets":
			ps.secrets(v, p)
		case "models":
			ps.models(v, p)
		case "shell":
			ps.shell(v, p)
		case "env":
			ps.env(v, p)
		case "tools":
			ps.tools(v, p)
		case "limits":
			ps.limits(v, p)
		case "escalation":
			ps.mapping(v, key, []string{"timeout"}, func(key string, k, v *yaml.Node) {
				if s, ok := ps.str(v, "escalation.timeout", false); ok {
					d, err := parseDuration(s)
					if err != nil {
						ps.fail(v, "escalation.timeout", "%v", err)
					}
					p.Escalation.Timeout = d
				}
			})
		case "sandbox":
			ps.mapping(v, key, []string{"ptrace", "home"}, func(key string, k, v *yaml.Node) {
				switch key {
				case "ptrace":
					p.Sandbox.Ptrace, _ = ps.boolean(v, "sandbox.ptrace")
				case "home":
					if s, ok := ps.str(v, "sandbox.home", false); ok {
						if s != HomeFresh && s != HomePersist {
							ps.fail(v, "sandbox.home", "%q is not fresh or persist", s)
						}
						p.Sandbox.Home = s
					}
				}
			})
		}
	})
}

// checkFSEntry validates one fs.read / fs.write entry.
func checkFSEntry(s string) error {
	switch {
	case s == "":
		return errors.New("empty path")
	case strings.HasPrefix(s, "~") && s != "~" && !strings.HasPrefix(s, "~/"):
		return errors.New(`only "~" and "~/..." are expanded; name another user's home by its absolute path`)
	}
	if err := checkPathGlob(s); err != nil {
		return err
	}
	// A ".." after a glob would make the pattern's meaning depend on what
	// the glob matched; there is nothing a clean path cannot say instead.
	sawMeta := false
	for seg := range strings.SplitSeq(s, "/") {
		if seg == ".." && sawMeta {
			return errors.New(`".." after a glob segment`)
		}
		if hasMeta(seg) {
			sawMeta = true
		}
	}
	return nil
}

func (ps *parser) net(n *yaml.Node, p *Policy) {
	ps.mapping(n, "net", []string{"allow", "deny", "dns"}, func(key string, k, v *yaml.Node) {
		switch key {
		case "allow":
			// An entry is a string, or a mapping that also limits the
			// requests to its hosts (secrets.go).
			if !ps.kind(v, "net.allow", yaml.SequenceNode, "a list") {
				return
			}
			l := make([]string, 0, len(v.Content))
			var rules []RequestRule
			for i, e := range v.Content {
				s, r, ok := ps.allowEntry(e, fmt.Sprintf("net.allow[%d]", i))
				if !ok {
					return
				}
				l = append(l, s)
				if r != nil {
					rules = append(rules, *r)
				}
			}
			p.Net.Allow, p.Net.Rules = l, rules
		case "deny":
			l := ps.list(v, "net."+key, func(s string) error {
				var err error
				if key == "allow" {
					_, err = netrule.Parse([]string{s}, nil)
				} else {
					_, err = netrule.Parse(nil, []string{s})
				}
				if err != nil {
					if u := errors.Unwrap(err); u != nil {
						err = u
					}
				}
				return err
			})
			if l == nil {
				return
			}
			if key == "allow" {
				p.Net.Allow = l
			} else {
				p.Net.Deny = l
			}
		case "dns":
			if s, ok := ps.str(v, "net.dns", false); ok {
				if s != "allowlist" && s != "none" {
					ps.fail(v, "net.dns", "%q: want allowlist or none", s)
				}
				p.Net.DNS = s
			}
		}
	})
}

// checkProgram validates a shell.allow entry or an args key: a bare name or
// a path, never a glob (a program list must say exactly what runs).
func checkProgram(s string) error {
	switch {
	case s == "":
		return errors.New("empty program name")
	case strings.ContainsAny(s, " \t*?[]\\$`'\"|&;<>(){}"):
		return errors.New("a program is a bare name such as git or a path such as ./gradlew, without spaces, quotes or globs")
	case strings.HasSuffix(s, "/"):
		return errors.New("a program cannot be a directory")
	}
	return nil
}

func (ps *parser) shell(n *yaml.Node, p *Policy) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		// `shell: false` is the short way to say no programs and no shell
		// strings, handy in a narrowing policy.
		if b, _ := ps.boolean(n, "shell"); b {
			ps.fail(n, "shell", "only `shell: false` is a shorthand; write a mapping to allow programs")
			return
		}
		f := false
		p.Shell.Allow = []string{}
		p.Shell.Raw = &f
		return
	}
	ps.mapping(n, "shell", []string{"allow", "args", "raw", "spawn", "run_written"}, func(key string, k, v *yaml.Node) {
		switch key {
		case "allow":
			if l := ps.list(v, "shell.allow", checkProgram); l != nil {
				p.Shell.Allow = l
			}
		case "args":
			p.Shell.Args = map[string]ArgRules{}
			ps.mapping(v, "shell.args", nil, func(prog string, k, v *yaml.Node) {
				f := "shell.args." + prog
				if err := checkProgram(prog); err != nil {
					ps.fail(k, f, "%v", err)
					return
				}
				if strings.Contains(prog, "/") {
					ps.fail(k, f, "argument rules are keyed by a bare program name; they apply to every path it runs from")
					return
				}
				var r ArgRules
				ps.mapping(v, f, []string{"allow", "deny", "escalate"}, func(key string, k, v *yaml.Node) {
					l := ps.list(v, f+"."+key, checkArgPattern)
					switch key {
					case "allow":
						r.Allow = l
					case "deny":
						r.Deny = l
					case "escalate":
						r.Escalate = l
					}
				})
				p.Shell.Args[prog] = r
			})
		case "raw":
			if b, ok := ps.boolean(v, "shell.raw"); ok {
				p.Shell.Raw = &b
			}
		case "spawn":
			p.Shell.Spawn, _ = ps.boolean(v, "shell.spawn")
		case "run_written":
			p.Shell.RunWritten, _ = ps.boolean(v, "shell.run_written")
		}
	})
}

func checkArgPattern(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("empty pattern")
	}
	for tok := range strings.FieldsSeq(s) {
		if err := checkWordGlob(tok); err != nil {
			return err
		}
	}
	return nil
}

func checkEnvName(s string, globOK bool) error {
	if s == "" {
		return errors.New("empty name")
	}
	for i, r := range s {
		switch {
		case r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		case globOK && strings.ContainsRune("*?[]!^-", r):
		default:
			return errors.New("an environment name is letters, digits and '_', not starting with a digit")
		}
	}
	if globOK {
		return checkWordGlob(s)
	}
	return nil
}

func (ps *parser) env(n *yaml.Node, p *Policy) {
	ps.mapping(n, "env", []string{"allow", "set"}, func(key string, k, v *yaml.Node) {
		switch key {
		case "allow":
			if l := ps.list(v, "env.allow", func(s string) error { return checkEnvName(s, true) }); l != nil {
				p.Env.Allow = l
			}
		case "set":
			p.Env.Set = map[string]string{}
			ps.mapping(v, "env.set", nil, func(name string, k, v *yaml.Node) {
				f := "env.set." + name
				if err := checkEnvName(name, false); err != nil {
					ps.fail(k, f, "%v", err)
					return
				}
				if s, ok := ps.str(v, f, true); ok {
					p.Env.Set[name] = s
				}
			})
		}
	})
}

func (ps *parser) limits(n *yaml.Node, p *Policy) {
	ps.mapping(n, "limits", []string{"memory", "cpu", "wall", "pids", "model_tokens"}, func(key string, k, v *yaml.Node) {
		f := "limits." + key
		s, ok := ps.str(v, f, true)
		if !ok {
			return
		}
		var err error
		switch key {
		case "memory":
			p.Limits.Memory, err = parseSize(s)
		case "cpu":
			p.Limits.CPU, err = parseCPU(s)
		case "wall":
			p.Limits.Wall, err = parseDuration(s)
		case "pids":
			var n int
			n, err = strconv.Atoi(s)
			if err != nil || n < 1 || n > 1<<22 {
				err = fmt.Errorf("%q: want a whole number of processes from 1 to %d", s, 1<<22)
			}
			p.Limits.Pids = n
		case "model_tokens":
			p.Limits.ModelTokens, err = parseTokens(s)
		}
		if err != nil {
			ps.fail(v, f, "%v", err)
		}
	})
}

// Tools: `name: true|false|allow|deny|escalate`, or a rule mapping
// `{verdict: allow, when: {arg: pattern or [patterns]}, else: deny}`, or a
// server mapping `server: {function: ..., "*": ...}` flattened to
// "server.function".
func (ps *parser) tools(n *yaml.Node, p *Policy) {
	p.Tools = map[string]ToolRule{}
	ps.mapping(n, "tools", nil, func(name string, k, v *yaml.Node) {
		f := "tools." + name
		if err := checkToolName(name); err != nil {
			ps.fail(k, f, "%v", err)
			return
		}
		if v.Kind == yaml.MappingNode && !hasKey(v, "verdict") {
			if strings.Contains(name, ".") || name == "*" {
				ps.fail(v, f, "a server's functions are one level deep: write server: {function: ...}")
				return
			}
			ps.mapping(v, f, nil, func(fn string, k, v *yaml.Node) {
				full := name + "." + fn
				if err := checkToolName(name + "." + fn); err != nil {
					ps.fail(k, "tools."+full, "a function name is letters, digits, '_', '-' or \"*\"")
					return
				}
				if _, dup := p.Tools[full]; dup {
					ps.fail(k, "tools."+full, "given twice")
					return
				}
				if r, ok := ps.toolRule(v, "tools."+full); ok {
					p.Tools[full] = r
				}
			})
			return
		}
		if _, dup := p.Tools[name]; dup {
			ps.fail(k, f, "given twice")
			return
		}
		if r, ok := ps.toolRule(v, f); ok {
			p.Tools[name] = r
		}
	})
}

func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

func checkToolName(s string) error {
	if s == "*" {
		return nil
	}
	// "tool", "server.*" or "server.function"; the function may hold
	// further dots (MCP tool names sometimes do), the server may not.
	server, fn, dotted := strings.Cut(s, ".")
	bad := !toolWord(server) || dotted && fn != "*" && (fn == "" || strings.Contains(fn, "*") ||
		strings.Contains(fn, "..") || strings.HasPrefix(fn, ".") || strings.HasSuffix(fn, ".") || !toolWord(strings.ReplaceAll(fn, ".", "_")))
	if bad {
		return errors.New(`a tool name is "tool", "server.function", "server.*" or "*", with letters, digits, '_', '-', '/', ':'`)
	}
	return nil
}

func toolWord(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '/' || r == ':')
	})
}

func (ps *parser) verdictValue(n *yaml.Node, field string) (Verdict, bool) {
	if !ps.kind(n, field, yaml.ScalarNode, "true, false or escalate") {
		return 0, false
	}
	switch {
	case n.Tag == "!!bool":
		b, _ := ps.boolean(n, field)
		if b {
			return Allow, true
		}
		return Deny, true
	case n.Tag == "!!str":
		var v Verdict
		if err := v.UnmarshalText([]byte(n.Value)); err == nil {
			return v, true
		}
	}
	ps.fail(n, field, "want true, false or escalate, got %s", describe(n))
	return 0, false
}

func (ps *parser) toolRule(n *yaml.Node, field string) (ToolRule, bool) {
	if n.Kind != yaml.MappingNode {
		v, ok := ps.verdictValue(n, field)
		return ToolRule{Verdict: v}, ok
	}
	r := ToolRule{Else: Escalate}
	ps.mapping(n, field, []string{"verdict", "when", "else"}, func(key string, k, v *yaml.Node) {
		switch key {
		case "verdict":
			r.Verdict, _ = ps.verdictValue(v, field+".verdict")
		case "else":
			r.Else, _ = ps.verdictValue(v, field+".else")
		case "when":
			r.When = map[string][]string{}
			ps.mapping(v, field+".when", nil, func(arg string, k, v *yaml.Node) {
				f := field + ".when." + arg
				if arg == "" {
					ps.fail(k, f, "empty argument name")
					return
				}
				var pats []string
				if v.Kind == yaml.SequenceNode {
					pats = ps.list(v, f, checkCondPattern)
					if pats != nil && len(pats) == 0 {
						ps.fail(v, f, "an empty list never matches; remove the condition or the rule")
						return
					}
				} else if s, ok := ps.str(v, f, true); ok {
					if err := checkCondPattern(s); err != nil {
						ps.fail(v, f, "%q: %v", s, err)
						return
					}
					pats = []string{s}
				}
				r.When[arg] = pats
			})
		}
	})
	if ps.err == nil && len(r.When) == 0 && hasKey(n, "else") {
		ps.fail(n, field+".else", "else needs a when")
	}
	return r, ps.err == nil
}

func checkCondPattern(s string) error {
	if isPathPattern(s) {
		return checkFSEntry(s)
	}
	return checkWordGlob(s)
}

// sortedKeys returns m's keys in order, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
