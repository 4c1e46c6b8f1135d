package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/airlock-run/airlock/errs"
)

// Definition is what a client is shown of a tool, and so what is pinned: a
// changed description can steer a model as much as a changed schema.
type Definition struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// Digest is the SHA-256 of the definition with its schema in canonical
// form (keys sorted, no spaces), so a server that re-orders keys is not
// taken for one that changed a tool.
func (d Definition) Digest() string {
	schema := canonical(d.InputSchema)
	b, _ := json.Marshal(struct {
		Name, Title, Description string
		Schema                   json.RawMessage
	}{d.Name, d.Title, d.Description, schema})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

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
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return raw
	}
	return b
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
	case ok && old.Digest == digest:
		return PinSame, nil
	case ok:
		return PinChanged, nil
	}
	p.pins[d.Name] = Pin{Digest: digest, Definition: d}
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
	p.pins[d.Name] = Pin{Digest: d.Digest(), Definition: d}
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
	tmp := p.file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return errs.Wrap(errs.Unavailable, err, "mcp pins")
	}
	if err := os.Rename(tmp, p.file); err != nil {
		return errs.Wrap(errs.Unavailable, err, "mcp pins")
	}
	return nil
}
