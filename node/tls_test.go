package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
	"github.com/airlock-run/airlock/jobs/pki"
)

const enrolSecret = "fedcba9876543210fedcba9876543210"

var nodeIDs int

// relay is a TCP relay to target that records what clients send: a
// network between the node and the server that someone reads.
type relay struct {
	addr string
	mu   sync.Mutex
	seen bytes.Buffer
}

func startRelay(t *testing.T, target string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &relay{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(c, up)
				io.Copy(io.MultiWriter(up, r), c)
			}()
		}
	}()
	return r
}

func (r *relay) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen.Write(b)
}

func (r *relay) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Contains(r.seen.Bytes(), []byte(s))
}

// apiOver serves the real API with enrolment on ln's address: over TLS
// only when ca is given (as beyond loopback), plain otherwise.
func apiOver(t *testing.T, ca *pki.CA, tlsOnly bool) string {
	h := api.New(api.Config{Token: operatorToken, CA: ca, EnrollToken: enrolSecret, Temporal: "127.0.0.1:1"}).Handler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tlsOnly {
		cert, err := ca.IssueAPI([]string{"127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		ln = api.Listener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, false)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// tlsConfig is a node's configuration; each case enrols a node of its
// own (the CA binds an id to its first key).
func tlsConfig(server, dir, pin string) Config {
	nodeIDs++
	return Config{Server: server, ID: fmt.Sprintf("n%d", nodeIDs), Pool: "ci", StateDir: dir, EnrollToken: enrolSecret, CAPin: pin,
		HTTP: &http.Client{Timeout: 5 * time.Second}, Log: slog.New(slog.DiscardHandler)}
}

// Before, the API was plain HTTP: whoever reads the network between a
// node and its server reads the enrolment token (and every token after
// it). Over TLS, with the CA pinned by the enrolment token file, nothing
// of them crosses in clear, and a server that cannot show a certificate
// of the pinned CA is sent nothing.
func TestAttackTokensInClear(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	pin := pki.Fingerprint(ca.Cert)
	ctx := context.Background()

	t.Run("plain HTTP: the token crosses in clear", func(t *testing.T) {
		r := startRelay(t, apiOver(t, ca, false))
		if _, err := loadIdentity(ctx, tlsConfig("http://"+r.addr, t.TempDir(), "")); err != nil {
			t.Fatal(err)
		}
		if !r.saw(enrolSecret) {
			t.Fatal("the relay did not see the enrolment token over plain HTTP")
		}
	})

	t.Run("TLS pinned by the token file: nothing in clear", func(t *testing.T) {
		r := startRelay(t, apiOver(t, ca, true))
		cfg := tlsConfig("https://"+r.addr, t.TempDir(), pin)
		att, err := startAttesting(ctx, cfg)
		if err != nil {
			t.Fatalf("enrol over TLS: %v", err)
		}
		if _, err := att.register(ctx, cfg, Registration{ID: cfg.ID, Pool: "ci", Queues: []string{"node." + cfg.ID}}); err != nil {
			t.Fatalf("register over TLS: %v", err)
		}
		if r.saw(enrolSecret) || r.saw(att.token()) || r.saw("/v1/nodes") {
			t.Fatal("the relay saw a token or a path over TLS")
		}
		// The file tree's client, made before the node enrolled, checks
		// the server the same way.
		resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: apiTransport(cfg)}).Get("https://" + r.addr + "/v1/files")
		if err != nil {
			t.Fatalf("the tree's client over TLS: %v", err)
		}
		resp.Body.Close()
		// Restarted, the node trusts the CA it holds, pin or none.
		cfg.CAPin = ""
		if _, err := loadIdentity(ctx, cfg); err != nil {
			t.Fatalf("restart over TLS without the pin: %v", err)
		}
	})

	t.Run("a server of another CA is sent nothing", func(t *testing.T) {
		other, _ := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
		r := startRelay(t, apiOver(t, other, true))
		_, err := loadIdentity(ctx, tlsConfig("https://"+r.addr, t.TempDir(), pin))
		if err == nil || !strings.Contains(err.Error(), "not the fleet's server's") {
			t.Fatalf("enrolled with an impostor: %v", err)
		}
		impostor := tlsConfig("https://"+r.addr, t.TempDir(), pin)
		if _, err := (&http.Client{Timeout: 5 * time.Second, Transport: apiTransport(impostor)}).Get("https://" + r.addr + "/v1/files"); err == nil {
			t.Fatal("the tree's client took the impostor")
		}
		if r.saw(enrolSecret) {
			t.Fatal("the impostor was sent the enrolment token")
		}
	})

	t.Run("without a pin or a held CA nothing is sent", func(t *testing.T) {
		r := startRelay(t, apiOver(t, ca, true))
		_, err := loadIdentity(ctx, tlsConfig("https://"+r.addr, t.TempDir(), ""))
		if err == nil || !strings.Contains(err.Error(), "no fleet CA") || r.saw(enrolSecret) {
			t.Fatalf("got %v; want a refusal naming the missing CA, and no token sent", err)
		}
	})

	t.Run("over plain HTTP an answer naming another CA is refused", func(t *testing.T) {
		other, _ := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
		_, err := loadIdentity(ctx, tlsConfig("http://"+apiOver(t, other, false), t.TempDir(), pin))
		if err == nil || !strings.Contains(err.Error(), "pins") {
			t.Fatalf("got %v; want the other CA refused by the pin", err)
		}
	})

	t.Run("a plain request where TLS is required gets a 400 naming https", func(t *testing.T) {
		resp, err := http.Get("http://" + apiOver(t, ca, true) + "/v1/nodes")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), "https://") {
			t.Fatalf("got %d %q", resp.StatusCode, b)
		}
	})
}
