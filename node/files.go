package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// LocalFiles is the node's own file store as the jobs' kernels read it:
// each job's files are a tree of their own there, named by the job's id,
// so a job's kernel reads what it kept and what Fetch brought it, and
// nothing of another job on the same node. internal/cli adapts files.Store
// to it; a ref is a files.Ref string, the SHA-256 of the bytes, so the
// same bytes have the same ref on the node and on the server.
type LocalFiles interface {
	Put(ctx context.Context, job string, data []byte) (ref string, err error)
	Get(ctx context.Context, job, ref string) ([]byte, error)
}

// ServerTree is the Tree of a node whose server keeps the fleet's files:
// it asks the server (GET and POST /v1/files) with the node's own token,
// and the server answers only for a job this node runs now.
type ServerTree struct {
	server    string
	tokenFile string
	local     LocalFiles
	http      *http.Client
}

var _ Tree = (*ServerTree)(nil)

// NewServerTree is the Tree of a node of cfg (its server, and its token
// under cfg.StateDir, read at each request since every enrolment renews
// it) over local, the node's own store.
func NewServerTree(cfg Config, local LocalFiles) *ServerTree {
	hc := cfg.HTTP
	if hc == nil {
		// A file may be 31 MiB: more time than a registration's.
		hc = &http.Client{Timeout: 2 * time.Minute, Transport: apiTransport(cfg)}
	}
	return &ServerTree{server: strings.TrimRight(cfg.Server, "/"), tokenFile: filepath.Join(cfg.StateDir, "pki", "node.token"),
		local: local, http: hc}
}

// Fetch downloads ref for job j from the server into j's tree of the local
// store. The bytes must be the ref's: the node keeps nothing under a name
// that is not its digest. The taint the server names (every value of its
// TaintHeader) comes back joined.
func (t *ServerTree) Fetch(ctx context.Context, j jobs.Job, ref string) (string, error) {
	hexd, err := refDigest(ref)
	if err != nil {
		return "", err
	}
	resp, err := t.do(ctx, http.MethodGet, "/v1/files/"+url.PathEscape(ref)+"?job="+url.QueryEscape(j.ID), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", answerErr(resp, "read "+ref+" for job "+j.ID)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, jobs.MaxFile+1))
	if err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "node: read %s for job %s from %s", ref, j.ID, t.server)
	}
	if sum := sha256.Sum256(data); len(data) > jobs.MaxFile || hex.EncodeToString(sum[:]) != hexd {
		return "", errs.Unavailablef("node: the server's answer for %s is not that file (%d bytes of another digest); nothing was kept", ref, len(data))
	}
	taint := strings.Join(resp.Header.Values(jobs.TaintHeader), "; ")
	got, err := t.local.Put(ctx, j.ID, data)
	if err != nil {
		return "", fmt.Errorf("node: keep %s for job %s: %w", ref, j.ID, err)
	}
	if got != ref {
		return "", errs.New(errs.Internal, "node: the local store kept %s as %s", ref, got)
	}
	return taint, nil
}

// Keep uploads each of refs from j's tree of the local store to the
// server, naming the ref so the server checks the bytes are its.
func (t *ServerTree) Keep(ctx context.Context, j jobs.Job, refs []string) error {
	for _, ref := range refs {
		if _, err := refDigest(ref); err != nil {
			return err
		}
		data, err := t.local.Get(ctx, j.ID, ref)
		if err != nil {
			return fmt.Errorf("node: hand %s of job %s to the server: %w", ref, j.ID, err)
		}
		resp, err := t.do(ctx, http.MethodPost, "/v1/files?job="+url.QueryEscape(j.ID)+"&ref="+url.QueryEscape(ref), data)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return answerErr(resp, "keep "+ref+" of job "+j.ID)
		}
	}
	return nil
}

// do sends one request with the node's current token.
func (t *ServerTree) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	tok, err := pki.ReadToken(t.tokenFile)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "node: its token (%s; the node enrols at start)", t.tokenFile)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.server+path, bytes.NewReader(body))
	if err != nil {
		return nil, errs.Invalidf("node: --server %q: %v", t.server, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "node: %s %s at %s", method, strings.SplitN(path, "?", 2)[0], t.server)
	}
	return resp, nil
}

// answerErr is a refusal of the server's, in its class and its words: a
// file this job may not read is "not found", as the server said it.
func answerErr(resp *http.Response, what string) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	class := errs.Unavailable
	switch {
	case resp.StatusCode == http.StatusNotFound:
		class = errs.NotFound
	case resp.StatusCode == http.StatusForbidden:
		class = errs.Denied
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		class = errs.Invalid
	}
	return errs.New(class, "%s: %s", what, msg)
}

// refDigest is the hex digest of a reference in its one written form.
func refDigest(ref string) (string, error) {
	const prefix = "airlock-file:sha256:"
	h, ok := strings.CutPrefix(ref, prefix)
	if _, err := hex.DecodeString(h); !ok || err != nil || len(h) != 64 || strings.ToLower(h) != h {
		return "", errs.Invalidf("file reference %q: want %s followed by 64 lower-case hex digits", ref, prefix)
	}
	return h, nil
}
