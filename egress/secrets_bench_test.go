package egress_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// BenchmarkInterception measures, in one run, one HTTPS GET made directly
// to the upstream, through an opaque CONNECT tunnel (other.test), and
// through an intercepted connection with a bound secret written in
// (api.github.test): "new-conn" pays every handshake per request (the
// intercepted path has two), "keep-alive" reuses one connection.
func BenchmarkInterception(b *testing.B) {
	s := newSecretStack(b)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.ca.CertPEM())
	pool.AddCert(s.root.cert)
	pu, _ := url.Parse("http://" + s.httpAddr)
	for _, keep := range []bool{false, true} {
		mode := "new-conn"
		if keep {
			mode = "keep-alive"
		}
		for _, tc := range []struct {
			name, host string
			proxy      bool
		}{{"direct", "other.test", false}, {"opaque", "other.test", true}, {"intercepted", "api.github.test", true}} {
			b.Run(mode+"/"+tc.name, func(b *testing.B) {
				tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: !keep}
				if tc.proxy {
					tr.Proxy = http.ProxyURL(pu)
				} else {
					// Straight to the upstream's address, as if from outside
					// the box.
					tr.TLSClientConfig.ServerName = tc.host
				}
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr, Timeout: 20 * time.Second}
				u := s.url(tc.host, "/bench")
				if !tc.proxy {
					u = "https://127.0.0.1:" + strconv.Itoa(ports[tc.host]) + "/bench"
				}
				for b.Loop() {
					req, _ := http.NewRequest("GET", u, nil)
					req.Header.Set("Authorization", "Bearer "+s.placeholder)
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
			})
		}
	}
}
