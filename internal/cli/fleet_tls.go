package cli

import (
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// The API over TLS: the server's side (its certificate, the listener,
// the enrolment token file that carries the CA's pin) and the CLI's (the
// fleet CA it trusts for an https:// server).

// apiHTTP is the CLI's client of the server: for an https:// server it
// trusts the fleet CA alone, from --ca-file, else $AIRLOCK_CA_FILE, else
// the local server's STATE/pki/ca.pem.
func (c *clientFlags) apiHTTP(env *Env, server string, timeout time.Duration) (*http.Client, error) {
	hc := &http.Client{Timeout: timeout}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" {
		return hc, nil
	}
	file := firstNonEmpty(*c.caFile, env.Getenv("AIRLOCK_CA_FILE"))
	if file == "" {
		dir, err := FleetDir(env, "", "server")
		if err != nil {
			return nil, err
		}
		file = filepath.Join(dir, "pki", "ca.pem")
	}
	_, caPEM, err := pki.ReadCert(absFrom(env, file))
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "--server %s: the fleet CA to check it against (set --ca-file to the server's STATE/pki/ca.pem)", server)
	}
	if _, err := pki.CAPool(caPEM); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "--ca-file %s", file)
	}
	hc.Transport = &http.Transport{TLSClientConfig: pki.APIClientTLS(func() []byte { return caPEM }, ""),
		TLSHandshakeTimeout: 10 * time.Second}
	return hc, nil
}
