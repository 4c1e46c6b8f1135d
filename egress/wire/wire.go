// Package wire is the small protocol between airlock's in-box forwarder
// (egress/forward) and the egress proxy outside the box (egress): the line a
// connection opens with on the proxy's Unix socket. Both sides import it;
// nothing else needs to.
//
// Every connection to the proxy's socket starts with one line
//
//	AIRLOCK-EGRESS/1 <mode> <token>\n
//
// where mode is "http" (an HTTP proxy conversation follows), "socks" (a SOCKS5
// one follows) or "ping" (the proxy answers "ok\n" and closes; the forwarder
// uses it to fail early on a wrong socket or token). The token is the box's
// secret: the socket's directory is private already, and the token keeps a
// process of the same user on the host from borrowing a box's allowlist.
//
//	forwarder (in box)                         proxy (host)
//	   | ---- AIRLOCK-EGRESS/1 http TOKEN\n ---> |  token compared in constant time
//	   | ---- client bytes, untouched ---------> |  wrong token: closed (http: 407 first)
//	   | <--- proxy replies, untouched --------- |
//
// The forwarder does not parse what its clients send; the proxy alone reads
// HTTP and SOCKS, so there is one parser to harden and fuzz.
package wire

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Magic opens every preamble; a future incompatible change bumps its number.
const Magic = "AIRLOCK-EGRESS/1"

// Modes of a connection.
const (
	ModeHTTP  = "http"
	ModeSOCKS = "socks"
	ModePing  = "ping"
)

// MaxLine bounds the preamble; a longer one is refused before it is read whole.
const MaxLine = 200

// tokenBytes is the entropy of a token: 256 bits.
const tokenBytes = 32

// NewToken returns a fresh random token (64 hex characters).
func NewToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make egress token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ValidToken reports whether t has the form NewToken produces, so a token
// with a space or a newline can never split the preamble.
func ValidToken(t string) bool {
	if len(t) != 2*tokenBytes {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Preamble returns the opening line for mode and token.
func Preamble(mode, token string) []byte {
	return []byte(Magic + " " + mode + " " + token + "\n")
}

// ErrBadPreamble is returned for a line that is not a preamble at all.
var ErrBadPreamble = errors.New("not an airlock egress preamble")

// ErrBadToken is returned for a well-formed preamble with the wrong token.
var ErrBadToken = errors.New("wrong egress token")

// ReadPreamble reads the opening line from r and checks its token against
// want in constant time. It returns the mode. It reads at most MaxLine bytes
// before giving up, whatever r holds.
func ReadPreamble(r *bufio.Reader, want string) (mode string, err error) {
	var line []byte
	for {
		b, err := r.ReadByte()
		if err != nil {
			if err == io.EOF {
				return "", ErrBadPreamble
			}
			return "", err
		}
		if b == '\n' {
			break
		}
		if len(line) >= MaxLine {
			return "", ErrBadPreamble
		}
		line = append(line, b)
	}
	parts := strings.Split(string(line), " ")
	if len(parts) != 3 || parts[0] != Magic {
		return "", ErrBadPreamble
	}
	switch parts[1] {
	case ModeHTTP, ModeSOCKS, ModePing:
	default:
		return "", ErrBadPreamble
	}
	if !ValidToken(want) || subtle.ConstantTimeCompare([]byte(parts[2]), []byte(want)) != 1 {
		return "", ErrBadToken
	}
	return parts[1], nil
}
