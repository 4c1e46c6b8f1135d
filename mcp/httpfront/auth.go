package httpfront

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/airlock-run/airlock/errs"
)

// TokenBytes is how much randomness a generated token holds.
const TokenBytes = 32

// MinTokenLen is the shortest token a token file may hold: 16 bytes' worth
// of hex. A shorter one could be guessed by a local process trying.
const MinTokenLen = 32

// maxTokenFile bounds what is read of a token file.
const maxTokenFile = 4096

// NewToken returns a fresh bearer token: TokenBytes random bytes in hex.
func NewToken() (string, error) {
	b := make([]byte, TokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "no randomness for the bearer token")
	}
	return hex.EncodeToString(b), nil
}

// authorized checks the request's bearer token, in constant time, and
// answers 401 when it is missing or wrong. Both sides are hashed first,
// so the comparison takes the same time whatever the length sent.
func (f *Front) authorized(w http.ResponseWriter, r *http.Request) bool {
	if f.o.NoAuth {
		return true
	}
	why := ""
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	switch {
	case f.o.Token == "":
		why = "no token is configured, so every request is refused"
	case scheme == "" && token == "":
		why = "no bearer token; send the header Authorization: Bearer <token>, with the token airlock printed at start or the one in --" + FlagTokenFile
	case !strings.EqualFold(scheme, "Bearer"):
		why = "the Authorization header is not a bearer token; send Authorization: Bearer <token>"
	default:
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		want := sha256.Sum256([]byte(f.o.Token))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return true
		}
		why = "wrong bearer token"
	}
	// Debug: a flood of bad requests must not flood the log.
	f.o.Log.Debug("mcp request refused", "client", clientOf(r), "reason", why)
	w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
	http.Error(w, fmt.Sprintf("Unauthorized: airlock: %s: %s", f.o.Name, why), http.StatusUnauthorized)
	return false
}

// ReadTokenFile reads the bearer token from path, a file the person made:
// a regular file (not a link, FIFO or device) owned by this user that no
// group or other user may read. A file others can read is refused, since
// whoever reads it can start servers in this user's name.
func ReadTokenFile(path string) (string, error) {
	// O_NOFOLLOW refuses a link at the last step; O_NONBLOCK keeps a FIFO
	// from blocking the open. What is checked is the file opened, not
	// the name again.
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if isLoop(err) {
			return "", errs.Invalidf("--%s %s: a symbolic link; name the file itself", FlagTokenFile, path)
		}
		return "", errs.Wrap(errs.Invalid, err, "--%s", FlagTokenFile)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return "", errs.Wrap(errs.Invalid, err, "--%s", FlagTokenFile)
	}
	if !st.Mode().IsRegular() {
		return "", errs.Invalidf("--%s %s: not a regular file (it is %s); put the token in a file", FlagTokenFile, path, st.Mode().Type())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", errs.Invalidf("--%s %s: readable by group or others (mode %04o); run: chmod 600 %s", FlagTokenFile, path, perm, path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return "", errs.Invalidf("--%s %s: owned by uid %d, not by this user (%d); make the file yourself", FlagTokenFile, path, sys.Uid, os.Getuid())
	}
	b, err := io.ReadAll(io.LimitReader(fd, maxTokenFile+1))
	if err != nil {
		return "", errs.Wrap(errs.Invalid, err, "--%s", FlagTokenFile)
	}
	if len(b) > maxTokenFile {
		return "", errs.Invalidf("--%s %s: over %d bytes; the file holds only the token", FlagTokenFile, path, maxTokenFile)
	}
	tok := string(bytes.TrimSpace(b))
	switch {
	case len(tok) < MinTokenLen:
		return "", errs.Invalidf("--%s %s: the token is shorter than %d characters; make one with: openssl rand -hex 32 > %s",
			FlagTokenFile, path, MinTokenLen, path)
	case strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r > '~' }):
		return "", errs.Invalidf("--%s %s: the token holds spaces, control or non-ASCII characters; put one token on one line", FlagTokenFile, path)
	}
	return tok, nil
}

func isLoop(err error) bool {
	pe, ok := err.(*os.PathError)
	return ok && pe.Err == syscall.ELOOP
}
