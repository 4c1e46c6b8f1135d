package api

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-run/airlock/jobs/pki"
)

// One port serves TLS and, where allowed, plain HTTP; a client that
// connects and sends nothing holds up nobody else.
func TestListenerSniffs(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ca.IssueAPI([]string{"127.0.0.1"})
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Listener(raw, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, true)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.TLS != nil {
				io.WriteString(w, "tls")
				return
			}
			io.WriteString(w, "plain")
		})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := raw.Addr().String()

	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	tlsClient := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		TLSClientConfig: pki.APIClientTLS(func() []byte { return ca.PEM }, "")}}
	for _, tc := range []struct {
		name, url, want string
		c               *http.Client
	}{
		{"plain", "http://" + addr + "/", "plain", &http.Client{Timeout: 3 * time.Second}},
		{"TLS", "https://" + addr + "/", "tls", tlsClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.c.Get(tc.url)
			if err != nil {
				t.Fatalf("with a silent client connected: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != tc.want {
				t.Fatalf("got %q, want %q", b, tc.want)
			}
		})
	}
}
