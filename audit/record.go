// Package audit is airlock's evidence: an append-only JSON Lines log whose
// records are hash-chained, so that any later edit, deletion, insertion,
// reordering or truncation of the middle is found by Verify.
//
// Any package may import it. Parts that produce evidence (the mediator, the
// egress proxy, the file store) depend only on the Sink interface; the
// program's wiring opens one *Log and hands it to them. There is no package
// level log and no do-nothing default: a part without a Sink records nothing
// and must say so in its own documentation.
//
// # Format
//
// Each line is one JSON object. The writer encodes the record with every
// field but "hash" (keys in a fixed order, the free Fields map with sorted
// keys), computes hash = hex(sha256(those bytes)), and writes the same bytes
// with `,"hash":"<hex>"` appended before the closing brace. Because "prev"
// (the previous record's hash) is inside the hashed bytes, each hash covers
// the whole history before it. Verify hashes the stored bytes as they are, so
// no re-encoding can hide or invent a difference.
//
// A keyless chain proves that the file is internally consistent. Someone who
// can write the file can also rewrite every record after the one they change;
// to catch that, keep the head hash that Verify reports (or that Log.Head
// returns) somewhere the writer cannot reach and pass it back with
// `airlock audit verify --head`.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Record is one audit event.
type Record struct {
	// Seq numbers records from 1 without gaps; Append sets it.
	Seq int64 `json:"seq"`
	// Time is when the event happened; Append sets it from the log's clock
	// when it is zero. Stored in UTC with nanoseconds.
	Time time.Time `json:"time"`
	// Kind says what happened: "decision", "run", "egress",
	// "grant.saved", "job.files_handed", "file.erased", ...
	Kind string `json:"kind"`
	// CallDigest is the sha256 (hex) of the canonical call (see Digest);
	// empty for events that are not about one call.
	CallDigest string `json:"call_digest,omitempty"`
	// Verdict is "allow", "deny" or "escalate" for decisions; empty otherwise.
	Verdict string `json:"verdict,omitempty"`
	// Rule names the policy field that decided; empty when none did.
	Rule string `json:"rule,omitempty"`
	// Reason is the sentence the agent was given.
	Reason string `json:"reason,omitempty"`
	// Decider is who decided: "policy", "person:<name>", "timeout",
	// "error" or "grant".
	Decider string `json:"decider,omitempty"`
	// Fields holds kind-specific data (a runner Description, byte counts).
	// Any value that encodes as JSON will do, structs included; it is
	// stored (and read back) as plain JSON values. A value that does not
	// encode is refused by Append.
	Fields map[string]any `json:"fields,omitempty"`
	// Prev is the Hash of the record before; empty for the first record.
	Prev string `json:"prev"`
	// Hash is the hex sha256 of this record's encoding without the hash
	// itself; Append sets it.
	Hash string `json:"hash,omitempty"`
}

// Sink receives audit records. *Log is the one implementation that keeps
// them; Traced wraps a Sink to also emit spans.
type Sink interface {
	Append(Record) error
}

// hashSuffixLen is the length of `,"hash":"` + 64 hex digits + `"}`.
const hashSuffixLen = len(`,"hash":"`) + sha256.Size*2 + len(`"}`)

// body is the hashed part of a record: every field but the hash, in the
// order of Record's declaration.
type body struct {
	Seq        int64          `json:"seq"`
	Time       string         `json:"time"`
	Kind       string         `json:"kind"`
	CallDigest string         `json:"call_digest,omitempty"`
	Verdict    string         `json:"verdict,omitempty"`
	Rule       string         `json:"rule,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Decider    string         `json:"decider,omitempty"`
	Fields     map[string]any `json:"fields,omitempty"`
	Prev       string         `json:"prev"`
}

// timeLayout keeps nanoseconds with a fixed width so lines sort and compare
// as text and the encoding of a time never depends on its value.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// encode returns the line for r (with its trailing newline) and its hash.
// r.Seq, r.Time and r.Prev must already be set.
func encode(r Record) (line []byte, hash string, err error) {
	fields, err := plain(r.Fields)
	if err != nil {
		return nil, "", fmt.Errorf("encode %s record fields: %w", r.Kind, err)
	}
	r.Fields = fields
	b, err := json.Marshal(body{
		Seq: r.Seq, Time: r.Time.UTC().Format(timeLayout), Kind: r.Kind,
		CallDigest: r.CallDigest, Verdict: r.Verdict, Rule: r.Rule, Reason: r.Reason,
		Decider: r.Decider, Fields: r.Fields, Prev: r.Prev,
	})
	if err != nil {
		return nil, "", fmt.Errorf("encode %s record: %w", r.Kind, err)
	}
	sum := sha256.Sum256(b)
	hash = hex.EncodeToString(sum[:])
	line = make([]byte, 0, len(b)+hashSuffixLen+1)
	line = append(line, b[:len(b)-1]...)
	line = append(line, `,"hash":"`...)
	line = append(line, hash...)
	line = append(line, `"}`...)
	line = append(line, '\n')
	return line, hash, nil
}

// plain turns fields into plain JSON values (maps with sorted keys, numbers
// as written), so a struct among them (a runner Description) is stored in
// the one encoding Verify accepts: its fields in key order, not in
// declaration order.
func plain(fields map[string]any) (map[string]any, error) {
	if fields == nil {
		return nil, nil
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// split separates a stored line (without newline) into its hashed body and
// the hash it claims. ok is false when the line does not end the way encode
// ends every line.
func split(line []byte) (b []byte, claimed string, ok bool) {
	n := len(line)
	if n < hashSuffixLen+2 || line[n-1] != '}' || line[n-2] != '"' {
		return nil, "", false
	}
	suffix := line[n-hashSuffixLen:]
	if string(suffix[:9]) != `,"hash":"` {
		return nil, "", false
	}
	claimed = string(suffix[9 : 9+sha256.Size*2])
	for i := 0; i < len(claimed); i++ {
		c := claimed[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return nil, "", false
		}
	}
	b = make([]byte, 0, n-hashSuffixLen+1)
	b = append(b, line[:n-hashSuffixLen]...)
	b = append(b, '}')
	return b, claimed, true
}

// hashOf is the hex sha256 of b.
func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Digest returns the hex sha256 of call's JSON encoding. encoding/json
// writes struct fields in declaration order and map keys sorted, so equal
// calls built the same way give equal digests.
func Digest(call any) (string, error) {
	b, err := json.Marshal(call)
	if err != nil {
		return "", fmt.Errorf("digest call: %w", err)
	}
	return hashOf(b), nil
}
