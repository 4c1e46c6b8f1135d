package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/airlock-run/airlock/errs"
)

// Definition is what a client is shown of a tool, and so what is pinned:
// all of it. A changed description can steer a model as much as a changed
// schema, and a flip of annotations (readOnlyHint) or a title carrying
// instructions changes what a client lets through without asking.
type Definition struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Meta         json.RawMessage // "_meta"
	// Other holds every other member as listed (icons, execution, members
	// of later protocol versions): they are pinned and shown too.
	Other map[string]json.RawMessage
}

// Hints are what a definition's annotations say of the tool's reach, read
// exactly: a hint counts only as the JSON boolean under its exact key.
type Hints struct {
	// ReadOnly: readOnlyHint true and openWorldHint false, both stated. An
	// open-world tool reaches outside with its arguments (a URL, a query)
	// even when it changes nothing, so it can send data out.
	ReadOnly bool
	// OpenWorld: openWorldHint stated true. Its results are text from
	// outside.
	OpenWorld bool
}

// Hints reads the definition's annotations; annotations that are not an
// object of booleans where hints are expected give no hint.
func (d Definition) Hints() Hints {
	var a map[string]json.RawMessage
	if json.Unmarshal(d.Annotations, &a) != nil {
		return Hints{}
	}
	is := func(key, want string) bool { return string(a[key]) == want }
	return Hints{
		ReadOnly:  is("readOnlyHint", "true") && is("openWorldHint", "false"),
		OpenWorld: is("openWorldHint", "true"),
	}
}

// definitionMembers are the members Definition names; anything else goes
// to Other.
var definitionMembers = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"}

// ParseDefinition reads one tool of a tools/list answer with exact keys
// (the answer was checked for keys alike under folding before). Its name
// must be a string; the text members, when present, strings.
func ParseDefinition(raw json.RawMessage) (Definition, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Definition{}, errs.Invalidf("a tool that is not an object")
	}
	var d Definition
	if err := json.Unmarshal(m["name"], &d.Name); err != nil || d.Name == "" {
		return Definition{}, errs.Invalidf("a tool without a string name")
	}
	for key, dst := range map[string]*string{"title": &d.Title, "description": &d.Description} {
		if v, ok := m[key]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, dst); err != nil {
				return Definition{}, errs.Invalidf("tool %q: %s is not a string", d.Name, key)
			}
		}
	}
	d.InputSchema, d.OutputSchema, d.Annotations, d.Meta = m["inputSchema"], m["outputSchema"], m["annotations"], m["_meta"]
	for k, v := range m {
		if !slices.Contains(definitionMembers, k) {
			if d.Other == nil {
				d.Other = map[string]json.RawMessage{}
			}
			d.Other[k] = v
		}
	}
	return d, nil
}

// members returns every member of d in canonical form (keys sorted, no
// spaces, numbers as written), absent ones left out.
func (d Definition) members() map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	str := func(k, v string) {
		if v != "" {
			m[k], _ = json.Marshal(v)
		}
	}
	raw := func(k string, v json.RawMessage) {
		if len(v) > 0 {
			m[k] = canonical(v)
		}
	}
	str("name", d.Name)
	str("title", d.Title)
	str("description", d.Description)
	raw("inputSchema", d.InputSchema)
	raw("outputSchema", d.OutputSchema)
	raw("annotations", d.Annotations)
	raw("_meta", d.Meta)
	for k, v := range d.Other {
		raw(k, v)
	}
	return m
}

// MarshalJSON writes d as the tool object a client is shown, in canonical
// form: what the gateway forwards is exactly what it pinned.
func (d Definition) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.members()) // maps marshal with sorted keys
}

// UnmarshalJSON reads a tool object with exact keys.
func (d *Definition) UnmarshalJSON(b []byte) error {
	def, err := ParseDefinition(b)
	if err != nil {
		return err
	}
	*d = def
	return nil
}

// Digest is the SHA-256 of the whole definition in canonical form, so a
// server that re-orders keys is not taken for one that changed a tool,
// and one that changes any member is.
func (d Definition) Digest() string {
	b, _ := d.MarshalJSON()
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ApprovalArgs is what a person approving a changed definition is shown:
// the members that differ, old and new, each as text (canonical JSON for
// the structured ones), and the names of the members that changed.
func ApprovalArgs(old, new Definition) map[string]any {
	om, nm := old.members(), new.members()
	var changed []string
	args := map[string]any{}
	for _, k := range unionKeys(om, nm) {
		if string(om[k]) == string(nm[k]) {
			continue
		}
		changed = append(changed, k)
		args["old_"+k], args["new_"+k] = memberText(om[k]), memberText(nm[k])
	}
	args["changed"] = changed
	return args
}

func memberText(v json.RawMessage) string {
	if len(v) == 0 {
		return "(absent)"
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

func unionKeys(a, b map[string]json.RawMessage) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// canonical re-encodes raw with sorted keys, no spaces and numbers as
// written; raw that does not parse is kept as it is (it cannot equal a
// canonical value that does).
func canonical(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Pins are the tool definitions of one wrapped server as first seen, kept
// in a file. A definition that differs from its pin is blocked until a
// person approves the new one (Repin).
type Pins struct {
	file string
	mu   sync.Mutex
	pins map[string]Pin
}

// Pin is one pinned definition.
type Pin struct {
	Digest     string     `json:"digest"`
	Definition Definition `json:"definition"`
	// Whole is set on pins of the whole definition. A pin without it was
	// written when only the name, title, description and input schema were
	// pinned: whatever else the tool has now was never seen by a person,
	// so it counts as changed until one approves it.
	Whole bool `json:"whole,omitempty"`
}

// PinState is how a listed definition compares with its pin.
type PinState uint8

// Pin states.
const (
	PinSame    PinState = iota // as pinned
	PinNew                     // first seen now, and pinned
	PinChanged                 // differs from the pin: blocked
)

// PinsFile names the pins file of the server started by argv under dir (the
// user's state directory): one file per command line, so two servers never
// share pins.
func PinsFile(dir string, argv []string) string {
	sum := sha256.Sum256([]byte(strings.Join(argv, "\x00")))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".json")
}

// OpenPins reads the pins in file; a missing file is no pins yet. A file
// that cannot be read or parsed is an error: forgetting the pins would
// approve every changed definition.
func OpenPins(file string) (*Pins, error) {
	p := &Pins{file: file, pins: map[string]Pin{}}
	if file == "" {
		return p, nil
	}
	// Pins are read from a regular file only: a link planted there would
	// have them read from a file of someone else's choosing.
	if fi, err := os.Lstat(file); err == nil && !fi.Mode().IsRegular() {
		return nil, errs.Invalidf("mcp pins: %s is not a regular file (a link or a directory); remove it", filepath.Base(file))
	}
	data, err := os.ReadFile(file)
	switch {
	case os.IsNotExist(err):
		return p, nil
	case err != nil:
		return nil, errs.Wrap(errs.Unavailable, err, "mcp pins")
	}
	var doc struct {
		Tools map[string]Pin `json:"tools"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "mcp pins %s (remove it to pin every tool afresh)", file)
	}
	for k, v := range doc.Tools {
		p.pins[k] = v
	}
	return p, nil
}

// Check compares d with its pin, pinning it when it is new.
func (p *Pins) Check(d Definition) (PinState, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	digest := d.Digest()
	old, ok := p.pins[d.Name]
	switch {
	case ok && old.Whole && old.Digest == digest:
		return PinSame, nil
	case ok:
		return PinChanged, nil
	}
	p.pins[d.Name] = Pin{Digest: digest, Definition: d, Whole: true}
	return PinNew, p.saveLocked()
}

// Pinned returns the pin of name.
func (p *Pins) Pinned(name string) (Pin, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pin, ok := p.pins[name]
	return pin, ok
}

// Repin replaces the pin of d.Name with d, after a person approved it.
func (p *Pins) Repin(d Definition) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pins[d.Name] = Pin{Digest: d.Digest(), Definition: d, Whole: true}
	return p.saveLocked()
}

func (p *Pins) saveLocked() error {
	if p.file == "" {
		return nil
	}
	b, err := json.MarshalIndent(struct {
		Tools map[string]Pin `json:"tools"`
	}{p.pins}, "", "  ")
	if err != nil {
		return errs.Wrap(errs.Internal, err, "mcp pins")
	}
	if err := os.MkdirAll(filepath.Dir(p.file), 0o700); err != nil {
		return errs.Wrap(errs.Unavailable, err, "mcp pins")
	}
	// A fresh temporary file (created exclusively, so never through a
	// link someone planted beside the pins) renamed over the file (which
	// replaces a link there rather than writing through it).
	tmp, err := os.CreateTemp(filepath.Dir(p.file), filepath.Base(p.file)+".*.tmp")
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "mcp pins")
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p.file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return errs.Wrap(errs.Unavailable, err, "mcp pins")
	}
	return nil
}
