package warmrun

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
)

// Bounds of a request. A run the client cannot fit in them runs cold (the
// client checks before it sends); a record over them is refused.
const (
	// MaxRequest is the largest request record, in bytes. A Unix
	// SOCK_SEQPACKET record must fit the socket's send buffer (about
	// 208 KiB by default), so a larger one could not be sent at all.
	MaxRequest = 128 << 10
	// MaxArgs and MaxEnv bound the number of arguments and of environment
	// entries.
	MaxArgs = 4096
	MaxEnv  = 4096
)

// magic starts every request: the format and its version.
const magic = "AWR1"

// flagTTY says a fourth descriptor follows the three streams: the client's
// controlling terminal, for a person's answer to an escalation.
const flagTTY = 1

// Request is one `airlock run` handed over: what cold `airlock run` would
// have read from its own process. The descriptors travel beside it.
type Request struct {
	// Args are the arguments after "run".
	Args []string
	// Env is the client's environment, as os.Environ.
	Env []string
	// Dir is the client's working directory; the server checks it is
	// the one the kernel says the client works in.
	Dir string
	// TTY says the client sends its controlling terminal as a fourth
	// descriptor.
	TTY bool
}

// fds is the number of descriptors that must come with r.
func (r *Request) fds() int {
	if r.TTY {
		return 4
	}
	return 3
}

// encode writes r in the request format: the magic, a flags byte, then the
// arguments, the environment (each a little-endian uint32 count of
// length-prefixed strings) and the directory.
func (r *Request) encode() ([]byte, error) {
	if len(r.Args) > MaxArgs || len(r.Env) > MaxEnv {
		return nil, fmt.Errorf("%d arguments and %d environment entries (at most %d and %d)", len(r.Args), len(r.Env), MaxArgs, MaxEnv)
	}
	b := append(make([]byte, 0, 512), magic...)
	var flags byte
	if r.TTY {
		flags |= flagTTY
	}
	b = append(b, flags)
	b = appendList(b, r.Args)
	b = appendList(b, r.Env)
	b = appendString(b, r.Dir)
	if len(b) > MaxRequest {
		return nil, fmt.Errorf("a request of %d bytes (at most %d)", len(b), MaxRequest)
	}
	return b, nil
}

func appendList(b []byte, l []string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(l)))
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

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

// Answers the server gives, in reply.Answer.
const (
	answerCold     = "cold"     // run it yourself; nothing was done
	answerAccepted = "accepted" // the server runs it; nothing more may be run by the client
	answerRefused  = "refused"  // the request was not taken; nothing was done
	answerExit     = "exit"     // the call ended with Code
	// answerChallenge asks the process that connected to send back the
	// secret the server holds at its descriptor Fd (challengeRecord + the
	// secret), read through /proc, before the call is accepted.
	answerChallenge = "challenge"
)

// reply is one record the server sends: JSON, which the client reads from
// a server it checked is its own user's.
type reply struct {
	Answer string `json:"answer"`
	Reason string `json:"reason,omitempty"`
	Code   int    `json:"code,omitempty"`
	Fd     int    `json:"fd,omitempty"`
}

// maxReason bounds a reply's reason, so every reply fits the client's
// buffer (maxReply) whatever paths it names.
const (
	maxReason = 1024 // at most 6 bytes each once escaped
	maxReply  = 8 << 10
)

func (r reply) encode() []byte {
	if len(r.Reason) > maxReason {
		r.Reason = r.Reason[:maxReason] + "…"
	}
	b, _ := json.Marshal(r)
	return b
}

// cancelRecord is what the client sends when a signal that ends a cold
// run arrives.
const cancelRecord = "C"

// challengeRecord starts the client's answer to a challenge; the secret
// follows.
const challengeRecord = "N"
