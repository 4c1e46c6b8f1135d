package warmrun

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-run/airlock/internal/warmhand"
)

// The request's format and bounds, and the answers, are the client's
// (internal/warmhand): the server reads what it writes.
const (
	MaxRequest = warmhand.MaxRequest
	MaxArgs    = warmhand.MaxArgs
	MaxEnv     = warmhand.MaxEnv
	magic      = warmhand.Magic
	flagTTY    = warmhand.FlagTTY
)

// Request is one `airlock run` handed over (warmhand.Request).
type Request = warmhand.Request

// decodeRequest reads a request exactly: the magic, known flags only,
// counts within the bounds, strings with no NUL (no argument or
// environment entry can hold one), an absolute directory, and no byte
// left over.
func decodeRequest(b []byte) (Request, error) {
	var r Request
	if len(b) > MaxRequest {
		return r, fmt.Errorf("request of %d bytes (at most %d)", len(b), MaxRequest)
	}
	d := decoder{b: b}
	if string(d.take(len(magic))) != magic {
		return r, fmt.Errorf("not a warm request (bad magic)")
	}
	flags := d.take(1)
	if d.err == nil && flags[0]&^flagTTY != 0 {
		return r, fmt.Errorf("unknown flags %#x", flags[0])
	}
	r.TTY = d.err == nil && flags[0]&flagTTY != 0
	r.Args = d.list(MaxArgs, "arguments")
	r.Env = d.list(MaxEnv, "environment entries")
	r.Dir = d.str()
	if d.err != nil {
		return Request{}, d.err
	}
	if len(d.b) != 0 {
		return Request{}, fmt.Errorf("%d bytes after the request", len(d.b))
	}
	if !strings.HasPrefix(r.Dir, "/") {
		return Request{}, fmt.Errorf("working directory %q is not absolute", r.Dir)
	}
	// A process's environment (os.Environ) names each variable once; a
	// request naming one twice would have the server's checks read one
	// entry and a cold run's process the other.
	seen := make(map[string]bool, len(r.Env))
	for _, e := range r.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return Request{}, fmt.Errorf("environment entry without a name")
		}
		if seen[k] {
			return Request{}, fmt.Errorf("environment variable %q named twice", k)
		}
		seen[k] = true
	}
	return r, nil
}

// decoder takes a request apart; its first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("request cut short")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32() int {
	v := d.take(4)
	if v == nil {
		return 0
	}
	n := binary.LittleEndian.Uint32(v)
	if n > MaxRequest {
		d.err = fmt.Errorf("length %d over the request's bound", n)
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	s := string(d.take(d.u32()))
	if d.err == nil && strings.IndexByte(s, 0) >= 0 {
		d.err = fmt.Errorf("a string with a NUL byte")
	}
	return s
}

func (d *decoder) list(max int, what string) []string {
	n := d.u32()
	if d.err == nil && n > max {
		d.err = fmt.Errorf("%d %s (at most %d)", n, what, max)
	}
	if d.err != nil {
		return nil
	}
	l := make([]string, 0, min(n, 64))
	for i := 0; i < n && d.err == nil; i++ {
		l = append(l, d.str())
	}
	return l
}

const (
	answerCold      = warmhand.AnswerCold
	answerAccepted  = warmhand.AnswerAccepted
	answerRefused   = warmhand.AnswerRefused
	answerExit      = warmhand.AnswerExit
	answerChallenge = warmhand.AnswerChallenge
	cancelRecord    = warmhand.CancelRecord
	challengeRecord = warmhand.ChallengeRecord
	maxReply        = warmhand.MaxReply
)

// reply is one record the server sends: JSON, which the client reads
// (warmhand.DecodeReply) from a server it checked is its own user's.
type reply = warmhand.Reply

// maxReason bounds a reply's reason, so every reply fits the client's
// buffer (maxReply) whatever paths it names.
const maxReason = 1024 // at most 6 bytes each once escaped

// encodeReply is r as the server sends it.
func encodeReply(r reply) []byte {
	if len(r.Reason) > maxReason {
		r.Reason = r.Reason[:maxReason] + "…"
	}
	b, _ := json.Marshal(r)
	return b
}
