// Package warmhand is the client half of handing one `airlock run` to
// `airlock warm`: the request and its encoding, the answers as the client
// reads them, the checks of the socket's directory and of the server, and
// Start, which the airlock binary runs while its packages are initialised
// (internal/warmhand/atstart), so a run handed over waits for none of the
// binary's initialisation but this package's. internal/warmrun holds the
// server and describes the exchange.
//
// Every package a package imports is initialised before it, and Go takes
// the ready package first in import-path order: reflect (fmt, encoding/json,
// encoding/binary, golang.org/x/sys/unix), or unicode (strings, bytes,
// path/filepath), which makes reflect ready, would bring most of the
// binary's initialisation forward with it. This package imports none of
// those (the importrules test holds it to that), and writes and reads its
// records by hand.
package warmhand

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// SocketName is the server's socket in its directory.
const SocketName = "warm.sock"

// Env is the variable that turns the hand-over off ("off") or has a run
// say why it went cold ("verbose").
const Env = "AIRLOCK_WARM"

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

// Magic starts every request: the format and its version.
const Magic = "AWR1"

// FlagTTY says a fourth descriptor follows the three streams: the client's
// controlling terminal, for a person's answer to an escalation.
const FlagTTY = 1

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

// Fds is the number of descriptors that must come with r.
func (r *Request) Fds() int {
	if r.TTY {
		return 4
	}
	return 3
}

// Encode writes r in the request format: the magic, a flags byte, then the
// arguments, the environment (each a little-endian uint32 count of
// length-prefixed strings) and the directory.
func (r *Request) Encode() ([]byte, error) {
	if len(r.Args) > MaxArgs || len(r.Env) > MaxEnv {
		return nil, errors.New(strconv.Itoa(len(r.Args)) + " arguments and " + strconv.Itoa(len(r.Env)) +
			" environment entries (at most " + strconv.Itoa(MaxArgs) + " and " + strconv.Itoa(MaxEnv) + ")")
	}
	b := append(make([]byte, 0, 512), Magic...)
	var flags byte
	if r.TTY {
		flags |= FlagTTY
	}
	b = append(b, flags)
	b = appendList(b, r.Args)
	b = appendList(b, r.Env)
	b = appendString(b, r.Dir)
	if len(b) > MaxRequest {
		return nil, errors.New("a request of " + strconv.Itoa(len(b)) + " bytes (at most " + strconv.Itoa(MaxRequest) + ")")
	}
	return b, nil
}

func appendList(b []byte, l []string) []byte {
	b = appendUint32(b, uint32(len(l)))
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = appendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// Answers the server gives, in Reply.Answer.
const (
	AnswerCold     = "cold"     // run it yourself; nothing was done
	AnswerAccepted = "accepted" // the server runs it; nothing more may be run by the client
	AnswerRefused  = "refused"  // the request was not taken; nothing was done
	AnswerExit     = "exit"     // the call ended with Code
	// AnswerChallenge asks the process that connected to send back the
	// secret the server holds at its descriptor Fd (ChallengeRecord + the
	// secret, read through /proc: ReadProof) before the call is accepted.
	AnswerChallenge = "challenge"
)

// MaxReply is the client's buffer for one reply; the server bounds a
// reply's reason so every reply fits.
const MaxReply = 8 << 10

// CancelRecord is what the client sends when a signal that ends a cold
// run arrives.
const CancelRecord = "C"

// ChallengeRecord starts the client's answer to a challenge; the secret
// follows.
const ChallengeRecord = "N"

// Reply is one record the server sends: a JSON object of these fields,
// which the client reads from a server it checked is its own user's.
type Reply struct {
	Answer string `json:"answer"`
	Reason string `json:"reason,omitempty"`
	Code   int    `json:"code,omitempty"`
	Fd     int    `json:"fd,omitempty"`
}

// DecodeReply reads b as encoding/json would read it into a Reply, but
// strictly: one object of the four fields, strings and an integer code,
// nothing after it. What the server's json.Marshal writes always passes;
// anything else is an error.
func DecodeReply(b []byte) (Reply, error) {
	var r Reply
	d := jsonReader{b: b}
	d.space()
	if !d.byte('{') {
		return r, errNotReply
	}
	d.space()
	if d.byte('}') {
		return r, d.end()
	}
	for {
		key, ok := d.str()
		d.space()
		if !ok || !d.byte(':') {
			return r, errNotReply
		}
		d.space()
		switch key {
		case "answer":
			r.Answer, ok = d.str()
		case "reason":
			r.Reason, ok = d.str()
		case "fd":
			r.Fd, ok = d.int()
		case "code":
			r.Code, ok = d.int()
		default:
			ok = false
		}
		d.space()
		if !ok {
			return r, errNotReply
		}
		if d.byte('}') {
			return r, d.end()
		}
		if !d.byte(',') {
			return r, errNotReply
		}
		d.space()
	}
}

var errNotReply = errors.New("not a reply")

// jsonReader reads the little of JSON a Reply is written in.
type jsonReader struct{ b []byte }

func (d *jsonReader) space() {
	for len(d.b) > 0 && (d.b[0] == ' ' || d.b[0] == '\t' || d.b[0] == '\n' || d.b[0] == '\r') {
		d.b = d.b[1:]
	}
}

func (d *jsonReader) byte(c byte) bool {
	if len(d.b) > 0 && d.b[0] == c {
		d.b = d.b[1:]
		return true
	}
	return false
}

func (d *jsonReader) end() error {
	d.space()
	if len(d.b) != 0 {
		return errNotReply
	}
	return nil
}

func (d *jsonReader) int() (int, bool) {
	i := 0
	if i < len(d.b) && d.b[i] == '-' {
		i++
	}
	start := i
	for i < len(d.b) && d.b[i] >= '0' && d.b[i] <= '9' {
		i++
	}
	if i == start || (d.b[start] == '0' && i > start+1) {
		return 0, false
	}
	n, err := strconv.Atoi(string(d.b[:i]))
	if err != nil {
		return 0, false
	}
	d.b = d.b[i:]
	return n, true
}

// str reads a JSON string: its escapes, \u ones with surrogate pairs
// included (a lone surrogate reads as U+FFFD, as encoding/json has it).
func (d *jsonReader) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	var s []byte
	for len(d.b) > 0 {
		c := d.b[0]
		switch {
		case c == '"':
			d.b = d.b[1:]
			return string(s), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			// Bytes that are not UTF-8 read as U+FFFD each, as
			// encoding/json reads them.
			r, size := utf8.DecodeRune(d.b)
			s = utf8.AppendRune(s, r)
			d.b = d.b[size:]
			continue
		case c != '\\':
			s = append(s, c)
			d.b = d.b[1:]
			continue
		}
		if len(d.b) < 2 {
			return "", false
		}
		e := d.b[1]
		d.b = d.b[2:]
		switch e {
		case '"', '\\', '/':
			s = append(s, e)
		case 'b':
			s = append(s, '\b')
		case 'f':
			s = append(s, '\f')
		case 'n':
			s = append(s, '\n')
		case 'r':
			s = append(s, '\r')
		case 't':
			s = append(s, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", false
			}
			if r >= 0xd800 && r < 0xdc00 && len(d.b) >= 6 && d.b[0] == '\\' && d.b[1] == 'u' {
				save := d.b
				d.b = d.b[2:]
				if lo, ok := d.hex4(); ok && lo >= 0xdc00 && lo < 0xe000 {
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				} else {
					d.b = save
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				r = 0xfffd
			}
			s = utf8.AppendRune(s, r)
		default:
			return "", false
		}
	}
	return "", false
}

func (d *jsonReader) hex4() (rune, bool) {
	if len(d.b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d.b[:4]), 16, 32)
	if err != nil {
		return 0, false
	}
	d.b = d.b[4:]
	return rune(n), true
}

// Outcome is how a hand-over ended.
type Outcome int

const (
	// Cold: nothing was run; the client runs the command itself.
	Cold Outcome = iota
	// Ran: the server ran the call; Result.Code is its exit code.
	Ran
	// Lost: the request was sent and no answer came, or the server
	// refused it: the client must not run the command (it may have run).
	Lost
)

// Result is what HandOver found.
type Result struct {
	Outcome Outcome
	Code    int
	// Reason says why the run went cold or was lost ("" when there is
	// no server); Warn, when set, is a line to show on every run (a
	// server or directory that is not this user's).
	Reason, Warn string
}
