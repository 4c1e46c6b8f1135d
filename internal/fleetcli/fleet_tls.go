package fleetcli

// The API over TLS, the server's side: its certificate, the listener, and
// the enrolment token file that carries the CA's pin (which a node reads).

import (
	"cmp"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/cli"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/jobs/pki"
)

// enrollTokenFile reads the enrolment token at path, creating a random
// one when the file is missing, and writes the file as "TOKEN PIN" when
// it does not carry pin (a file written before the pin, or after the CA
// was made again), through privfile: what a new node needs to enrol and
// to know it enrols with this server is then one file.
func enrollTokenFile(path, pin string) (string, error) {
	b, err := os.ReadFile(path)
	var token string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		var r [32]byte
		rand.Read(r[:])
		token = hex.EncodeToString(r[:])
	case err != nil:
		return "", errs.Wrap(errs.Unavailable, err, "enrolment token file")
	default:
		tok, have, perr := pki.ParseEnrollFile(b)
		if perr != nil {
			return "", errs.Wrap(errs.Invalid, perr, "%s", path)
		}
		if len(tok) < 16 {
			return "", errs.Invalidf("enrolment token file %s: the token is shorter than 16 characters", path)
		}
		if have == pin {
			return tok, nil
		}
		token = tok
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "enrolment token file")
	}
	if err := privfile.WriteFile(path, pki.EnrollFile(token, pin), 0o600, privfile.Options{}); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "enrolment token file")
	}
	return token, nil
}

// apiListener is the API's listener on ln: TLS with a certificate of the
// fleet CA for loopback and host, and plain HTTP as well when plain.
func apiListener(ln net.Listener, ca *pki.CA, host string, plain bool) (net.Listener, error) {
	cert, err := ca.IssueAPI([]string{"127.0.0.1", "::1", "localhost", host})
	if err != nil {
		return nil, err
	}
	return api.Listener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, plain), nil
}

// listening is the server's line naming where it serves the API.
func listening(addr net.Addr, plain bool, caFile, pin string) string {
	s := fmt.Sprintf("listening on https://%s (CA %s, %s)", addr, caFile, pin)
	if plain {
		s = fmt.Sprintf("listening on http://%s and https://%s (CA %s, %s)", addr, addr, caFile, pin)
	}
	return s
}

// readEnrollFile reads the enrolment token file (the flag's, else
// $AIRLOCK_ENROLL_TOKEN_FILE's, else the local server's): the token and
// the fleet CA's pin, "" in a file written before the pin.
func readEnrollFile(env *cli.Env, flagValue string) (token, pin string, err error) {
	file := cmp.Or(flagValue, env.Getenv("AIRLOCK_ENROLL_TOKEN_FILE"))
	if file == "" {
		dir, err := cli.FleetDir(env, "", "server")
		if err != nil {
			return "", "", err
		}
		file = filepath.Join(dir, "enroll-token")
	}
	b, err := os.ReadFile(cli.AbsFrom(env, file))
	if err != nil {
		return "", "", errs.Wrap(errs.Unavailable, err, "the server's enrolment token (set --enroll-token-file)")
	}
	token, pin, err = pki.ParseEnrollFile(b)
	if err != nil {
		return "", "", errs.Wrap(errs.Invalid, err, "%s", file)
	}
	return token, pin, nil
}
