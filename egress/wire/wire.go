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
// one follows), "http-fd" or "socks-fd" (the same, but on the box client's
// own TCP socket, passed with the line as SCM_RIGHTS, so the proxy relays
// between the client and the destination with nothing in between), or
// "ping" (the proxy answers "ok\n" and closes; the forwarder uses it to fail
// early on a wrong socket or token). The token is the box's
// secret: the socket's directory is private already, and the token keeps a
// process of the same user on the host from borrowing a box's allowlist.
//
//	box client        forwarder (in box)                      proxy (host)
//	    | --connect--> |                                          |
//	    |              | -- "AIRLOCK-EGRESS/1 http-fd TOKEN\n" --> |  token compared in constant time;
//	    |              |    + SCM_RIGHTS(client socket), close    |  wrong token: fd closed, nothing read
//	    | <================ HTTP or SOCKS5, read by the proxy ===> |
//
// The forwarder does not parse what its clients send; the proxy alone reads
// HTTP and SOCKS, so there is one parser to harden and fuzz.
package wire

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Magic opens every preamble; a future incompatible change bumps its number.
const Magic = "AIRLOCK-EGRESS/1"

// Modes of a connection.
const (
	// ModeHTTP and ModeSOCKS: the client's bytes follow on this connection.
	ModeHTTP  = "http"
	ModeSOCKS = "socks"
	// ModeHTTPFD and ModeSOCKSFD: the preamble carries the client's own TCP
	// socket (SCM_RIGHTS) and nothing follows; the proxy talks to the client
	// directly, one relay fewer for every byte.
	ModeHTTPFD  = "http-fd"
	ModeSOCKSFD = "socks-fd"
	// ModePing: the proxy answers "ok\n" and closes.
	ModePing = "ping"
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

// ParsePreamble checks one opening line (without its newline) against the
// token want, comparing the token in constant time, and returns the mode.
func ParsePreamble(line []byte, want string) (mode string, err error) {
	if len(line) > MaxLine {
		return "", ErrBadPreamble
	}
	parts := strings.Split(string(line), " ")
	if len(parts) != 3 || parts[0] != Magic {
		return "", ErrBadPreamble
	}
	switch parts[1] {
	case ModeHTTP, ModeSOCKS, ModeHTTPFD, ModeSOCKSFD, ModePing:
	default:
		return "", ErrBadPreamble
	}
	if !ValidToken(want) || subtle.ConstantTimeCompare([]byte(parts[2]), []byte(want)) != 1 {
		return "", ErrBadToken
	}
	return parts[1], nil
}
