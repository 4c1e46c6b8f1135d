package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/jobs"
)

// The server's file store, scoped to job trees:
//
//	POST /v1/files?job=ID[&ref=REF]   keep the body as a file of ID's tree → 201 {"ref", ...}
//	GET  /v1/files/REF?job=ID         the file, when REF is in ID's tree (else 404, as for no such file)
//	GET  /v1/files?job=ID             the tree's files (operator)
//
// An operator may act for any job; a node only for a job it runs now, as
// the job's workflow says (jobs.QueryPlacement): a node's word is never
// taken for it. A file records the taint of the job that kept it, and a
// job that reads a file a tainted job kept is tainted from then on, and so
// is every job it starts later (see Provenance).

// MaxFile is the most a kept file may be (jobs.MaxFile).
const MaxFile = jobs.MaxFile

// TaintHeader carries, on a file read, why the file is tainted
// (jobs.TaintHeader).
const TaintHeader = jobs.TaintHeader

// Files is the server's file store as the API uses it: internal/cli adapts
// files.Store to it (the API keeps no files of its own). References are
// files.Ref strings; a reference a tree may not read is NotFound in the
// same words as one never stored.
type Files interface {
	// StartJob registers job id (a child of parent, "" for none) and
	// returns its tree: its parent's, or a new one.
	StartJob(ctx context.Context, tenant, id, parent string) (tree string, err error)
	// TreeOf is the tree job id belongs to (NotFound for a job never
	// started).
	TreeOf(ctx context.Context, tenant, id string) (string, error)
	// CheckRef refuses a string that is not a reference in its one
	// written form; RefOf is the reference of data.
	CheckRef(ref string) error
	RefOf(data []byte) string
	// Put keeps data as a file of tree, kept by job.
	Put(ctx context.Context, tenant, tree, job string, data []byte) (ref string, err error)
	// Get returns ref's bytes when tree may read it.
	Get(ctx context.Context, tenant, tree, ref string) ([]byte, error)
	// List is what tree stored or was handed, newest first (Ref, Size,
	// Via, Stored).
	List(ctx context.Context, tenant, tree string) ([]FileInfo, error)
}

// bodyLimit is how much of a request's body the API reads: a file to keep
// may be MaxFile bytes (one over is read, to be refused by its size); every
// other body is a small JSON object.
func bodyLimit(r *http.Request) int64 {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/files" {
		return MaxFile + 1
	}
	return maxBody
}

// placements is what the API asks of the fleet about where a job runs
// (jobs.Client answers it from the job's workflow). A fleet that cannot
// say lets no node near a job's files.
type placements interface {
	Placement(ctx context.Context, id string) (jobs.Placement, error)
}

// startTree registers j in the file store before it starts, so a job
// never runs without its tree: a child's tree is its parent's.
func (s *Server) startTree(ctx context.Context, j jobs.Job) error {
	if s.cfg.Files == nil {
		return nil
	}
	// A job's files are its starting tenant's (recorded here): a node,
	// which has no tenant, reaches them only for a job it runs, an
	// operator only for a job of its own tenant.
	tenant := firstOf(j.Tenant, jobs.DefaultTenant)
	if err := s.prov.started(j.ID, tenant); err != nil {
		return fmt.Errorf("job %s: its file tree: %w", j.ID, err)
	}
	if _, err := s.cfg.Files.StartJob(ctx, tenant, j.ID, j.Parent); err != nil {
		return fmt.Errorf("job %s: its file tree: %w", j.ID, err)
	}
	return nil
}

// fileParams reads a files route's query: only the names it takes, each at
// most once, so no second spelling of job= reaches a reader that takes
// another one than this server does.
func fileParams(r *http.Request, names ...string) (map[string]string, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, errs.Invalidf("the query is not a URL query: %v", err)
	}
	out := map[string]string{}
	for k, v := range q {
		switch {
		case !slices.Contains(names, k):
			return nil, errs.Invalidf("parameter %q: not one of this route's (%s)", k, strings.Join(names, ", "))
		case len(v) != 1:
			return nil, errs.Invalidf("parameter %q: given %d times, want once", k, len(v))
		}
		out[k] = v[0]
	}
	if out["job"] == "" {
		return nil, errs.Invalidf("parameter \"job\": required (the job whose tree the file belongs to, ?job=ID)")
	}
	return out, jobs.CheckName("parameter \"job\"", out["job"])
}

// fileScope is the tenant and tree of job for the request's principal: an
// operator's for any job of its tenant, a node's only for a job it runs
// now. A node asking for any other job, known or not, gets the one 403; an
// operator asking for a job of another tenant is told it has no tree, as
// for a job never started.
func (s *Server) fileScope(ctx context.Context, job string) (tenant, tree string, err error) {
	p := PrincipalOf(ctx)
	if p.Role == RoleNode {
		if err := s.runsNow(ctx, p.Name, job); err != nil {
			return "", "", err
		}
	}
	none := errs.NotFoundf("parameter \"job\": job %s has no file tree on this server", job)
	tenant, ok := s.prov.tenantOfJob(job)
	if !ok || (p.Role == RoleOperator && firstOf(tenantOf(ctx), jobs.DefaultTenant) != tenant) {
		return "", "", none
	}
	tree, err = s.cfg.Files.TreeOf(ctx, tenant, job)
	if errs.ClassOf(err) == errs.NotFound {
		return "", "", none
	}
	return tenant, tree, err
}

// keepsFiles answers 404 for a server without a file store.
func (s *Server) keepsFiles(w http.ResponseWriter) bool {
	if s.cfg.Files == nil {
		writeErr(w, errs.NotFoundf("this server keeps no files (it runs without a file store)"))
		return false
	}
	return true
}

// runsNow refuses unless the job's workflow says node runs job now.
func (s *Server) runsNow(ctx context.Context, node, job string) error {
	refused := errs.New(errs.Denied, "node %s does not run job %s now: a node reads and keeps only the files of the jobs it runs", node, job)
	pl, ok := s.cfg.Jobs.(placements)
	if !ok {
		return refused
	}
	p, err := pl.Placement(ctx, job)
	switch {
	case errs.ClassOf(err) == errs.NotFound:
		return refused
	case err != nil:
		return err
	case !p.RunsOn(node):
		return refused
	}
	return nil
}

// putFile keeps the body as a file of the job's tree, recorded with the
// job's taint before it is kept.
func (s *Server) putFile(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.keepsFiles(w) {
		return
	}
	q, err := fileParams(r, "job", "ref")
	if err != nil {
		writeErr(w, err)
		return
	}
	job := q["job"]
	if want := q["ref"]; want != "" {
		if err := s.cfg.Files.CheckRef(want); err != nil {
			writeErr(w, errs.Invalidf("parameter \"ref\": %s", errs.AgentMessage(err)))
			return
		}
	}
	tenant, tree, err := s.fileScope(ctx, job)
	if err != nil {
		writeErr(w, err)
		return
	}
	data, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) || len(data) > MaxFile {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body: the file is over %d MiB, the most a file may be; nothing was kept", MaxFile>>20))
		return
	}
	if err != nil {
		writeErr(w, errs.Wrap(errs.Invalid, err, "the body: it could not be read whole; nothing was kept"))
		return
	}
	ref := s.cfg.Files.RefOf(data)
	if want := q["ref"]; want != "" && want != ref {
		writeErr(w, errs.Invalidf("parameter \"ref\": the body's digest is %s, not %s; nothing was kept", ref, want))
		return
	}
	taint, err := s.jobTaint(ctx, job)
	if err != nil {
		writeErr(w, err)
		return
	}
	// Recorded before the file is kept: a file in the store whose record
	// is missing reads as tainted, never as clean.
	if err := s.prov.keep(tenant, tree, ref, job, taint); err != nil {
		writeErr(w, err)
		return
	}
	got, err := s.cfg.Files.Put(ctx, tenant, tree, job, data)
	if err != nil {
		writeErr(w, err)
		return
	}
	if got != ref {
		writeErr(w, errs.New(errs.Internal, "the store kept %s as %s", ref, got))
		return
	}
	writeJSON(w, http.StatusCreated, Kept{Ref: ref, Size: len(data), Job: job, Tainted: taint != "", Taint: taint})
}

// jobTaint is why job is tainted now, "" when it is not: its start's
// taint, and what it has read since.
func (s *Server) jobTaint(ctx context.Context, job string) (string, error) {
	sum, err := s.parent(job)
	if err != nil {
		return "", errs.NotFoundf("parameter \"job\": job %s is not one of this server's", job)
	}
	why := ""
	if sum.Tainted {
		why = firstOf(sum.Taint, "tainted at its start")
	}
	return joinTaint(why, s.prov.readTaint(job)), nil
}

// getFile answers a file of the job's tree. When a tainted job kept it the
// reader is tainted from then on (recorded, and audited, before a byte is
// sent) and the answer says why in TaintHeader.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.keepsFiles(w) {
		return
	}
	ref := r.PathValue("ref")
	if err := s.cfg.Files.CheckRef(ref); err != nil {
		writeErr(w, errs.Invalidf("ref: %s", errs.AgentMessage(err)))
		return
	}
	q, err := fileParams(r, "job")
	if err != nil {
		writeErr(w, err)
		return
	}
	job := q["job"]
	tenant, tree, err := s.fileScope(ctx, job)
	if err != nil {
		writeErr(w, err)
		return
	}
	data, err := s.cfg.Files.Get(ctx, tenant, tree, ref)
	if err != nil {
		writeErr(w, err)
		return
	}
	taint, err := s.readBy(tenant, tree, ref, job)
	if err != nil {
		writeErr(w, err)
		return
	}
	if taint != "" {
		w.Header().Set(TaintHeader, taint)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}

// readBy records that job read ref of tree and returns the taint that
// brings it, "" for none. A taint the job did not have yet is kept (so the
// jobs it starts later are tainted, after a restart too) and audited as
// job.taint; when it cannot be kept the read fails.
func (s *Server) readBy(tenant, tree, ref, job string) (string, error) {
	var reasons []string
	for _, from := range s.prov.taintedKeepers(tenant, tree, ref, job) {
		why := "read the result of tainted job " + from
		if from == "" {
			why = "read file " + ref + ", which no job of this server's record kept"
		}
		added, err := s.prov.read(job, why)
		if err != nil {
			return "", err
		}
		if added {
			if err := s.record(AuditJobTaint, map[string]any{"job": job, "taint": why, "ref": ref}); err != nil {
				return "", err
			}
		}
		reasons = append(reasons, why)
	}
	return strings.Join(reasons, "; "), nil
}

// listFiles lists the job's tree: each file with the jobs that kept it
// and whether reading it taints.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.keepsFiles(w) {
		return
	}
	q, err := fileParams(r, "job")
	if err != nil {
		writeErr(w, err)
		return
	}
	tenant, tree, err := s.fileScope(ctx, q["job"])
	if err != nil {
		writeErr(w, err)
		return
	}
	list, err := s.cfg.Files.List(ctx, tenant, tree)
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]FileInfo, 0, len(list))
	for _, f := range list {
		f.Jobs, f.Taint = s.prov.keepers(tenant, tree, f.Ref)
		f.Tainted = f.Taint != ""
		out = append(out, f)
	}
	writeJSON(w, http.StatusOK, out)
}

// readTaint is why job is tainted by what it read ("" for nothing).
func (s *Server) readTaint(job string) string { return s.prov.readTaint(job) }

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Provenance is the server's record of each job's tenant, of who kept each
// file of a tree, with that job's taint then, and of the taint jobs took
// from reading files. It
// is a JSON-lines file appended (and flushed) before the act it records,
// read back whole at start: a job tainted by a read stays tainted after a
// restart, and so do the jobs it starts.
type Provenance struct {
	mu      sync.Mutex
	f       *os.File // nil: kept in memory only
	puts    map[string][]keeper
	reads   map[string][]string
	tenants map[string]string
}

type keeper struct{ job, taint string }

// provRecord is one line of the provenance file.
type provRecord struct {
	// Kind is "start" (Job, of Tenant, started), "keep" (Job kept Ref in
	// Tree, tainted by Taint) or "read" (Job read a tainted file: Taint is
	// why it is tainted now).
	Kind   string `json:"kind"`
	Tenant string `json:"tenant,omitempty"`
	Tree   string `json:"tree,omitempty"`
	Ref    string `json:"ref,omitempty"`
	Job    string `json:"job"`
	Taint  string `json:"taint,omitempty"`
}

// OpenProvenance opens (creating when absent) the provenance file at path;
// "" keeps the records in memory only, for tests. A line cut short at the
// end (a crash mid-write, before the act it recorded) is dropped; any
// other damage is an error naming the line.
func OpenProvenance(path string) (*Provenance, error) {
	p := &Provenance{puts: map[string][]keeper{}, reads: map[string][]string{}, tenants: map[string]string{}}
	if path == "" {
		return p, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "the provenance of the server's files (%s)", path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "read %s", path)
	}
	whole := bytes.LastIndexByte(b, '\n') + 1
	// Split in memory, with no bound on a line: every record this server
	// wrote, however long its taint, is read back.
	for n, line := range bytes.Split(b[:max(whole-1, 0)], []byte{'\n'}) {
		if whole == 0 {
			break
		}
		var rec provRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := errors.Join(jobs.CheckJSON(line), dec.Decode(&rec)); err != nil || !slices.Contains([]string{"start", "keep", "read"}, rec.Kind) {
			f.Close()
			return nil, errs.Invalidf("%s line %d: not a provenance record (restore the file from a backup; removing it forgets every taint a read brought)", path, n+1)
		}
		p.apply(rec)
	}
	if err := f.Truncate(int64(whole)); err != nil {
		f.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "cut the torn end of %s", path)
	}
	if _, err := f.Seek(int64(whole), io.SeekStart); err != nil {
		f.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "seek %s", path)
	}
	p.f = f
	return p, nil
}

// Close closes the file.
func (p *Provenance) Close() error {
	if p == nil || p.f == nil {
		return nil
	}
	return p.f.Close()
}

func fileKey(tenant, tree, ref string) string { return tenant + "\x00" + tree + "\x00" + ref }

func (p *Provenance) apply(rec provRecord) {
	switch rec.Kind {
	case "start":
		p.tenants[rec.Job] = rec.Tenant
	case "keep":
		k := fileKey(rec.Tenant, rec.Tree, rec.Ref)
		kp := keeper{rec.Job, rec.Taint}
		if !slices.Contains(p.puts[k], kp) {
			p.puts[k] = append(p.puts[k], kp)
		}
	case "read":
		if !slices.Contains(p.reads[rec.Job], rec.Taint) {
			p.reads[rec.Job] = append(p.reads[rec.Job], rec.Taint)
		}
	}
}

// append writes rec and flushes it, then applies it.
func (p *Provenance) append(rec provRecord) error {
	if p.f != nil {
		b, err := json.Marshal(rec)
		if err != nil {
			return errs.Wrap(errs.Internal, err, "encode a provenance record")
		}
		if _, err := p.f.Write(append(b, '\n')); err != nil {
			return errs.Wrap(errs.Unavailable, err, "record the provenance of %s (the disk of the server's state?)", firstOf(rec.Ref, rec.Job))
		}
		if err := p.f.Sync(); err != nil {
			return errs.Wrap(errs.Unavailable, err, "flush the provenance of %s", firstOf(rec.Ref, rec.Job))
		}
	}
	p.apply(rec)
	return nil
}

// started records job's tenant, before the job starts.
func (p *Provenance) started(job, tenant string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if have, ok := p.tenants[job]; ok && have == tenant {
		return nil
	}
	return p.append(provRecord{Kind: "start", Tenant: tenant, Job: job})
}

// tenantOfJob is the tenant job started in; ok is false for a job this
// server never started.
func (p *Provenance) tenantOfJob(job string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.tenants[job]
	return t, ok
}

// keep records that job, tainted by taint ("" for none), keeps ref in tree.
func (p *Provenance) keep(tenant, tree, ref, job, taint string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.puts[fileKey(tenant, tree, ref)], keeper{job, taint}) {
		return nil
	}
	return p.append(provRecord{Kind: "keep", Tenant: tenant, Tree: tree, Ref: ref, Job: job, Taint: taint})
}

// read records that job is tainted for why; added is false when it was
// already.
func (p *Provenance) read(job, why string) (added bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.reads[job], why) {
		return false, nil
	}
	return true, p.append(provRecord{Kind: "read", Job: job, Taint: why})
}

// readTaint is why job is tainted by its reads, "" for none.
func (p *Provenance) readTaint(job string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.reads[job], "; ")
}

// taintedKeepers are the tainted jobs of tree that kept ref, other than
// reader, sorted; "" stands for a file no record names a keeper of (kept
// another way, or its record lost), which counts as tainted.
func (p *Provenance) taintedKeepers(tenant, tree, ref, reader string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ks := p.puts[fileKey(tenant, tree, ref)]
	if len(ks) == 0 {
		return []string{""}
	}
	var out []string
	for _, k := range ks {
		if k.taint != "" && k.job != reader && !slices.Contains(out, k.job) {
			out = append(out, k.job)
		}
	}
	sort.Strings(out)
	return out
}

// keepers are the jobs of tree that kept ref and why reading it taints.
func (p *Provenance) keepers(tenant, tree, ref string) ([]string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ks := p.puts[fileKey(tenant, tree, ref)]
	if len(ks) == 0 {
		return []string{}, "no job of this server's record kept it"
	}
	jobsOf := []string{}
	var taints []string
	for _, k := range ks {
		if !slices.Contains(jobsOf, k.job) {
			jobsOf = append(jobsOf, k.job)
		}
		if k.taint != "" {
			taints = append(taints, "kept by tainted job "+k.job+" ("+k.taint+")")
		}
	}
	sort.Strings(jobsOf)
	return jobsOf, strings.Join(taints, "; ")
}
