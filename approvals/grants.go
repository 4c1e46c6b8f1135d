package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/policy"
)

// The grants file lists the calls a person allowed always. It is YAML
// unless its name ends in ".json":
//
//	# airlock grants: calls a person allowed always.
//	grants:
//	- {"kind": "argv", "argv": ["git", "push", "origin", "main"], "created": "2026-11-30T09:00:00Z"}
//	- {"kind": "tool", "tool": "search.web", "args": {"query": "weather"}, "created": "2026-11-30T09:01:00Z"}
//
// or {"grants": [ ... ]} in JSON. airlock writes each grant as one line in
// that form, with every string in printable ASCII (anything else escaped),
// and that line is exactly what a person is shown before it is saved. A
// person may edit the file; airlock adds new grants at the end of the list
// without touching the rest, and refuses (with FILE:LINE) to use or change a
// file that does not parse or holds a grant policy.ValidateGrant refuses.

// DefaultGrantsPath is $XDG_CONFIG_HOME/airlock/grants.yaml, else
// ~/.config/airlock/grants.yaml. It lies outside any working directory on
// purpose: a grants file the agent could write would let it approve itself.
func DefaultGrantsPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock", "grants.yaml"), nil
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".config", "airlock", "grants.yaml"), nil
	}
	return "", errs.Unavailablef("grants: no place for the grants file: neither XDG_CONFIG_HOME nor HOME is an absolute path")
}

const grantsHeader = "# airlock grants: calls a person allowed always (airlock approvals).\n# One grant per item; airlock adds new ones at the end.\n"

// maxGrantsFile bounds what LoadGrants reads.
const maxGrantsFile = 8 << 20

func isJSON(path string) bool { return strings.EqualFold(filepath.Ext(path), ".json") }

// LoadGrants reads the grants file at path. A file that does not exist
// holds no grants. Any other problem is an errs.Invalid error that names
// FILE:LINE.
func LoadGrants(path string) ([]policy.Grant, error) {
	data, err := readLimited(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "grants: read %s", path)
	}
	return ParseGrants(path, data)
}

func readLimited(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxGrantsFile+1))
	if err == nil && len(data) > maxGrantsFile {
		err = fmt.Errorf("larger than %d bytes", maxGrantsFile)
	}
	return data, err
}

// ParseGrants parses the contents of a grants file; filename decides the
// format and names the file in errors.
func ParseGrants(filename string, data []byte) ([]policy.Grant, error) {
	if isJSON(filename) {
		return parseJSONGrants(filename, data)
	}
	return parseYAMLGrants(filename, data)
}

// entry is one grant as stored.
type entry struct {
	Kind    string         `json:"kind" yaml:"kind"`
	Argv    []string       `json:"argv" yaml:"argv"`
	Tool    string         `json:"tool" yaml:"tool"`
	Args    map[string]any `json:"args" yaml:"args"`
	Created string         `json:"created" yaml:"created"`
}

var entryKeys = []string{"kind", "argv", "tool", "args", "created"}

func (e entry) grant() (policy.Grant, error) {
	g := policy.Grant{Kind: e.Kind, Argv: e.Argv, Tool: e.Tool, Args: e.Args}
	if g.Args != nil {
		// YAML reads 3 as an int, JSON as a float64; keep one form, the
		// one a tool call's arguments arrive in.
		g.Args, _ = jsonNumbers(g.Args).(map[string]any)
	}
	if e.Created != "" {
		t, err := time.Parse(time.RFC3339Nano, e.Created)
		if err != nil {
			return g, fmt.Errorf("created: %q is not an RFC 3339 time", e.Created)
		}
		g.Created = t
	}
	if err := policy.ValidateGrant(g); err != nil {
		return g, err
	}
	return g, nil
}

func jsonNumbers(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case []any:
		for i := range x {
			x[i] = jsonNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = jsonNumbers(x[k])
		}
	}
	return v
}

// yamlLine reads yaml.v3's messages; compiled on first use, when a grants
// file fails to parse.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`) })

func grantsErr(file string, line int, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if strings.ContainsFunc(file, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		file = Show(file)
	}
	if line > 0 {
		return errs.Invalidf("%s:%d: %s (fix or remove it; nothing was changed)", file, line, msg)
	}
	return errs.Invalidf("%s: %s (fix or remove it; nothing was changed)", file, msg)
}

func parseYAMLGrants(file string, data []byte) ([]policy.Grant, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		if m := yamlLine().FindStringSubmatch(first); m != nil {
			n, _ := strconv.Atoi(m[1])
			return nil, grantsErr(file, n, "%s", m[2])
		}
		return nil, grantsErr(file, 0, "%s", first)
	}
	seq, err := yamlGrantsSeq(file, &doc)
	if err != nil || seq == nil {
		return nil, err
	}
	var out []policy.Grant
	for i, item := range seq.Content {
		if item.Kind != yaml.MappingNode {
			return nil, grantsErr(file, item.Line, "grants[%d]: want a mapping with kind, argv or tool, args, created", i)
		}
		for k := 0; k+1 < len(item.Content); k += 2 {
			if key := item.Content[k].Value; !slices.Contains(entryKeys, key) {
				return nil, grantsErr(file, item.Content[k].Line, "grants[%d]: unknown key %s (want %s)", i, Show(key), strings.Join(entryKeys, ", "))
			}
		}
		var e entry
		if err := item.Decode(&e); err != nil {
			msg := strings.TrimPrefix(oneLine(err.Error()), "yaml: unmarshal errors:")
			return nil, grantsErr(file, item.Line, "grants[%d]: %s", i, strings.TrimSpace(msg))
		}
		g, err := e.grant()
		if err != nil {
			return nil, grantsErr(file, item.Line, "grants[%d]: %v", i, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// yamlGrantsSeq finds the grants sequence; nil for an empty document or a
// null list.
func yamlGrantsSeq(file string, doc *yaml.Node) (*yaml.Node, error) {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, grantsErr(file, root.Line, "want a mapping with a grants list")
	}
	var seq *yaml.Node
	for k := 0; k+1 < len(root.Content); k += 2 {
		key, val := root.Content[k], root.Content[k+1]
		if key.Value != "grants" {
			return nil, grantsErr(file, key.Line, "unknown key %s (want grants)", Show(key.Value))
		}
		switch {
		case val.Kind == yaml.ScalarNode && val.Tag == "!!null":
		case val.Kind == yaml.SequenceNode:
			seq = val
		default:
			return nil, grantsErr(file, val.Line, "grants: want a list")
		}
	}
	return seq, nil
}

func parseJSONGrants(file string, data []byte) ([]policy.Grant, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	lineAt := func(off int64) int {
		if off > int64(len(data)) {
			off = int64(len(data))
		}
		// Point at the next token rather than the end of the last one.
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
			off++
		}
		return 1 + bytes.Count(data[:off], []byte("\n"))
	}
	jerr := func(err error, at int64) error {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			at = se.Offset
		case errors.As(err, &te):
			at = te.Offset
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			at = int64(len(data))
			err = errors.New("unexpected end of file")
		}
		return grantsErr(file, lineAt(at), "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	expect := func(want json.Delim) error {
		at := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return jerr(err, at)
		}
		if d, ok := tok.(json.Delim); !ok || d != want {
			return grantsErr(file, lineAt(at), "want %q", string(want))
		}
		return nil
	}
	if err := expect('{'); err != nil {
		return nil, err
	}
	var out []policy.Grant
	for dec.More() {
		at := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, jerr(err, at)
		}
		if tok != "grants" {
			return nil, grantsErr(file, lineAt(at), "unknown key %s (want grants)", Show(fmt.Sprint(tok)))
		}
		if err := expect('['); err != nil {
			return nil, err
		}
		for i := 0; dec.More(); i++ {
			at := dec.InputOffset()
			var e entry
			if err := dec.Decode(&e); err != nil {
				return nil, jerr(err, at)
			}
			g, err := e.grant()
			if err != nil {
				return nil, grantsErr(file, lineAt(at), "grants[%d]: %v", i, err)
			}
			out = append(out, g)
		}
		if err := expect(']'); err != nil {
			return nil, err
		}
	}
	if err := expect('}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, grantsErr(file, lineAt(dec.InputOffset()), "unexpected text after the grants object")
	}
	return out, nil
}

// GrantLine is how g is written to a grants file of the given name: one
// line of printable ASCII, shown to the person before it is saved. It
// fails for a grant that cannot be stored faithfully (invalid UTF-8 in an
// argument, a value that is not JSON).
func GrantLine(filename string, g policy.Grant) (string, error) {
	if err := policy.ValidateGrant(g); err != nil {
		return "", err
	}
	w := lineWriter{yaml: !isJSON(filename)}
	w.b.WriteString(`{"kind": `)
	w.str(g.Kind)
	switch g.Kind {
	case "argv":
		w.b.WriteString(`, "argv": [`)
		for i, a := range g.Argv {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.str(a)
		}
		w.b.WriteByte(']')
	case "tool":
		w.b.WriteString(`, "tool": `)
		w.str(g.Tool)
		if g.Args != nil {
			w.b.WriteString(`, "args": `)
			w.value(map[string]any(g.Args), 0)
		}
	}
	if !g.Created.IsZero() {
		w.b.WriteString(`, "created": `)
		w.str(g.Created.UTC().Format(time.RFC3339Nano))
	}
	w.b.WriteByte('}')
	if w.err != nil {
		return "", w.err
	}
	return w.b.String(), nil
}

type lineWriter struct {
	b    strings.Builder
	yaml bool
	err  error
}

func (w *lineWriter) str(s string) {
	w.b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			if w.err == nil {
				w.err = errors.New("an argument is not valid UTF-8; a grants file cannot hold it exactly")
			}
			return
		case r == '"' || r == '\\':
			w.b.WriteByte('\\')
			w.b.WriteRune(r)
		case r == '\n':
			w.b.WriteString(`\n`)
		case r == '\t':
			w.b.WriteString(`\t`)
		case r == '\r':
			w.b.WriteString(`\r`)
		case r >= 0x20 && r < 0x7f:
			w.b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&w.b, `\u%04x`, r)
		case w.yaml:
			fmt.Fprintf(&w.b, `\U%08x`, r)
		default:
			hi, lo := utf16Pair(r)
			fmt.Fprintf(&w.b, `\u%04x\u%04x`, hi, lo)
		}
	}
	w.b.WriteByte('"')
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

func (w *lineWriter) value(v any, depth int) {
	if depth > 64 {
		w.fail("tool arguments are nested too deeply")
		return
	}
	switch x := v.(type) {
	case nil:
		w.b.WriteString("null")
	case bool:
		w.b.WriteString(strconv.FormatBool(x))
	case string:
		w.str(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			w.fail("a tool argument is not a JSON number")
			return
		}
		j, _ := json.Marshal(x)
		w.b.Write(j)
	case int:
		w.b.WriteString(strconv.Itoa(x))
	case int64:
		w.b.WriteString(strconv.FormatInt(x, 10))
	case json.Number:
		if _, err := x.Float64(); err != nil {
			w.fail("a tool argument is not a JSON number")
			return
		}
		w.b.WriteString(string(x))
	case []any:
		w.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.value(e, depth+1)
		}
		w.b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.b.WriteString(", ")
			}
			w.str(k)
			w.b.WriteString(": ")
			w.value(x[k], depth+1)
		}
		w.b.WriteByte('}')
	default:
		w.fail(fmt.Sprintf("a tool argument of type %T cannot be stored", v))
	}
}

func (w *lineWriter) fail(msg string) {
	if w.err == nil {
		w.err = errors.New(msg)
	}
}

// SaveGrant adds g to the grants file at path (creating it, 0600, and its
// directory, 0700) unless an equal grant is already there, and returns the
// line it wrote (or found). It holds an flock on path+".lock" meanwhile, so
// two airlock processes saving at once both land. A file that does not
// parse is left exactly as it was and its error returned. The new content
// is written to a temporary file and renamed over the old one, then read
// back; a crash leaves either the old file or the new one.
func SaveGrant(path string, g policy.Grant) (string, error) {
	line, err := GrantLine(path, g)
	if err != nil {
		return "", errs.Wrap(errs.Invalid, err, "grants: this grant cannot be saved")
	}
	// The directory, the lock and the file are reached without following a
	// link others could have placed, through directories only airlock's
	// user (and root) may change (privfile): a grants file written
	// elsewhere is one the agent could write, and so approve itself.
	dir := filepath.Dir(path)
	if err := privfile.MkdirAll(dir, privfile.Options{MakeDirs: true}); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "grants: create %s", dir)
	}
	lk, err := privfile.OpenAppend(path+".lock", os.O_RDWR, 0o600, privfile.Options{})
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "grants: lock %s", path)
	}
	defer lk.Close()
	if err := flockRetry(int(lk.Fd())); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "grants: lock %s", path)
	}
	old, err := readLimited(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", errs.Wrap(errs.Unavailable, err, "grants: read %s", path)
	}
	existing, err := ParseGrants(path, old)
	if err != nil {
		return "", err
	}
	for _, e := range existing {
		if sameGrant(e, g) {
			l, err := GrantLine(path, e)
			if err != nil {
				l = line
			}
			return l, nil
		}
	}
	next, err := withGrant(path, old, existing, line)
	if err != nil {
		return "", err
	}
	if err := writeAtomic(path, next); err != nil {
		return "", err
	}
	// Read it back: the file must hold every grant it held, and the new one.
	got, err := LoadGrants(path)
	if err != nil || len(got) != len(existing)+1 || !sameGrant(got[len(got)-1], g) {
		if werr := writeAtomic(path, old); werr != nil {
			return "", errs.Wrap(errs.Internal, werr, "grants: %s: restore after a bad write", path)
		}
		if err == nil {
			err = errors.New("the new grant did not read back")
		}
		return "", errs.Wrap(errs.Internal, err, "grants: %s: not saved", path)
	}
	return line, nil
}

// withGrant returns the file content with line added.
func withGrant(path string, old []byte, existing []policy.Grant, line string) ([]byte, error) {
	if isJSON(path) {
		var b bytes.Buffer
		b.WriteString("{\"grants\": [\n")
		for _, e := range existing {
			l, err := GrantLine(path, e)
			if err != nil {
				return nil, errs.Wrap(errs.Invalid, err, "grants: %s: rewrite", path)
			}
			b.WriteString("  " + l + ",\n")
		}
		b.WriteString("  " + line + "\n]}\n")
		return b.Bytes(), nil
	}
	if len(bytes.TrimSpace(old)) == 0 {
		return []byte(grantsHeader + "grants:\n- " + line + "\n"), nil
	}
	// Append an item to a block list that ends the file, keeping every
	// byte (comments included) of what is there.
	var doc yaml.Node
	if err := yaml.Unmarshal(old, &doc); err != nil {
		return nil, grantsErr(path, 0, "%v", err)
	}
	dash := -1 // the column of the new item's dash, from 0
	if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		root := doc.Content[0]
		n := len(root.Content)
		if n >= 2 && root.Content[n-2].Value == "grants" {
			val := root.Content[n-1]
			switch {
			case val.Kind == yaml.SequenceNode && val.Style&yaml.FlowStyle == 0 && len(val.Content) > 0:
				// An item's node starts two columns after its dash.
				dash = max(val.Content[0].Column-3, 0)
			case val.Kind == yaml.ScalarNode && val.Tag == "!!null" && val.Value == "":
				dash = 0
			}
		}
	}
	if dash >= 0 {
		next := append([]byte(nil), old...)
		if next[len(next)-1] != '\n' {
			next = append(next, '\n')
		}
		next = append(next, strings.Repeat(" ", dash)+"- "+line+"\n"...)
		return next, nil
	}
	// A layout that cannot simply be extended (a flow list, other text after
	// the list): write the list anew, keeping the old file beside it.
	if err := writeAtomic(path+".bak", old); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(grantsHeader + "# (rewritten by airlock; the previous file is " + filepath.Base(path) + ".bak)\ngrants:\n")
	for _, e := range existing {
		l, err := GrantLine(path, e)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "grants: %s: rewrite", path)
		}
		b.WriteString("- " + l + "\n")
	}
	b.WriteString("- " + line + "\n")
	return []byte(b.String()), nil
}

func sameGrant(a, b policy.Grant) bool {
	if a.Kind != b.Kind || a.Tool != b.Tool || !slices.Equal(a.Argv, b.Argv) {
		return false
	}
	ga, errA := GrantLine(".yaml", policy.Grant{Kind: a.Kind, Argv: a.Argv, Tool: a.Tool, Args: a.Args})
	gb, errB := GrantLine(".yaml", policy.Grant{Kind: b.Kind, Argv: b.Argv, Tool: b.Tool, Args: b.Args})
	return errA == nil && errB == nil && ga == gb
}

// writeAtomic replaces the file at path with data: a new temporary file
// beside it (never a name planted in advance), flushed, renamed over the
// old name (a link there is replaced, not followed), the directory flushed.
func writeAtomic(path string, data []byte) error {
	if err := privfile.WriteFile(path, data, 0o600, privfile.Options{}); err != nil {
		return errs.Wrap(errs.Unavailable, err, "grants: write %s", path)
	}
	return nil
}

func flockRetry(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.Join(strings.Fields(s), " ")
}
