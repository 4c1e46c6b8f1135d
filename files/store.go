// Package files is airlock's content-addressed file store: the place where a
// tool result too big for a model's context, or a file one tool hands to
// another, is kept whole and named by the SHA-256 of its bytes
// (airlock-file:sha256:<hex>).
//
// The store keeps its metadata in an embedded SQLite database and its blobs
// on disk, written atomically and checked against their digest on every read.
// It is divided by tenant; within a tenant a file belongs to the job trees
// that stored it (a tree is a job and everything it started, named by its
// first job's id), to later turns of the same conversation branch, and to
// trees a person handed it to. Anyone else is told "not found", in the same
// words as for a file that was never stored. Files are kept for a retention
// period after the tree last stored them, unless a legal hold keeps them;
// they can be sealed with the tenant's key and erased by job, tree or tenant.
//
// The mediator, the offload package, the daemon and the CLI import it; it
// imports nothing of airlock's but errs. Its SQLite driver is linked by
// files/sqldriver, which only the programs that open a store import.
package files

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
)

// MaxSize is the largest file the store keeps: 32 MiB, the largest payload a
// call's result is kept as.
const MaxSize = 32 << 20

// DefaultRetention is how long a file is kept after a tree last stored it.
const DefaultRetention = 90 * 24 * time.Hour

// staleTemp is how old a temporary blob must be before a collection removes
// it: younger ones may belong to a write still under way in another process.
const staleTemp = time.Hour

// Scope is who is asking: a tenant, and the job tree the call runs in.
type Scope struct {
	// Tenant divides the store; files never cross tenants.
	Tenant string
	// Tree names the job tree: its first job's id. The caller (the edge of
	// the system, which binds each call to its job) sets it; a job never
	// names its own tree.
	Tree string
	// Job is the job within the tree that stores a file, kept so that
	// erasure by job reaches it. Empty means the tree's first job.
	Job string
}

func (s Scope) job() string {
	if s.Job == "" {
		return s.Tree
	}
	return s.Job
}

func (s Scope) check() error {
	if err := checkName("tenant", s.Tenant); err != nil {
		return err
	}
	if err := checkName("tree", s.Tree); err != nil {
		return err
	}
	if s.Job != "" {
		return checkName("job", s.Job)
	}
	return nil
}

// checkName refuses names that are empty, too long or carry control
// characters: they end up in messages, audit events and paths' hashes.
func checkName(what, v string) error {
	switch {
	case v == "":
		return errs.Invalidf("files: a %s is required", what)
	case len(v) > 256:
		return errs.Invalidf("files: %s name is %d bytes long, at most 256", what, len(v))
	case !utf8.ValidString(v):
		return errs.Invalidf("files: %s name is not UTF-8", what)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return errs.Invalidf("files: %s name %q holds a control character", what, v)
		}
	}
	return nil
}

// Event is an audited action of the store.
type Event struct {
	// Type is "job.files_handed" or "files.erased".
	Type   string   `json:"type"`
	Tenant string   `json:"tenant"`
	Tree   string   `json:"tree,omitempty"`
	Job    string   `json:"job,omitempty"`
	By     string   `json:"by,omitempty"`
	Refs   []string `json:"refs,omitempty"`
	// Omitted counts files a hand-over left out because the person could
	// not read them.
	Omitted int `json:"omitted,omitempty"`
	// Count is how many files an erasure removed.
	Count int       `json:"count,omitempty"`
	At    time.Time `json:"at"`
}

// Event types.
const (
	EventHanded = "job.files_handed"
	EventErased = "files.erased"
)

// Options configure a Store. The zero value is a store with the real clock,
// 90 days' retention, no encryption and no audit.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Retention is how long a file is kept after a tree last stored it;
	// zero means DefaultRetention.
	Retention time.Duration
	// Keys gives each tenant's sealing key; nil means no tenant is sealed.
	Keys Keys
	// Audit records hand-overs and erasures. A hand-over whose event cannot
	// be recorded does not happen. Nil drops the events, for a local store
	// with no audit log.
	Audit func(context.Context, Event) error
	// BoxWritable are the paths a box may write; nil means none. A store
	// at or beneath one of them is refused: the box could swap the blobs
	// or point their names at the host's files.
	BoxWritable []string
}

// Store is a file store on disk. It is safe for concurrent use by many
// goroutines and by many processes sharing the directory.
type Store struct {
	dir  string
	db   *sql.DB
	opt  Options
	now  func() time.Time
	keep time.Duration
	// bufs holds read buffers GetTo reuses: allocating (and so zeroing and
	// faulting in) 32 MiB costs more than reading it from the page cache.
	bufs sync.Pool
}

// Open opens (creating when absent) the store in dir.
func Open(dir string, opt Options) (*Store, error) {
	if dir == "" {
		return nil, errs.Invalidf("files: no store directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "files: store directory %q", dir)
	}
	// The store's directory, and every directory above it, must be one no
	// box and (under root) no other user may change, and is reached
	// without following a link someone else could have placed: every file
	// below is then placed by name, and those names must stay the store's.
	if err := privfile.MkdirAll(abs, privfile.Options{MakeDirs: true, BoxWritable: opt.BoxWritable}); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "files: store directory %s", abs)
	}
	if err := ensureDir(filepath.Join(abs, "blobs")); err != nil {
		return nil, err
	}
	if !DriverLinked() {
		return nil, errs.New(errs.Internal, "files: open store %s: this program links no SQLite driver (import files/sqldriver)", abs)
	}
	dsn := "file:" + filepath.Join(abs, "meta.db") +
		"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "files: open store %s", abs)
	}
	s := &Store{dir: abs, db: db, opt: opt, now: opt.Now, keep: opt.Retention}
	if s.now == nil {
		s.now = time.Now
	}
	if s.keep <= 0 {
		s.keep = DefaultRetention
	}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// DriverLinked reports whether this program links the store's SQLite
// driver (files/sqldriver): without it Open fails. The airlock binary links
// none and hands the commands that open a store to airlock-mcp.
func DriverLinked() bool { return slices.Contains(sql.Drivers(), "sqlite") }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

const schemaVersion = 1

// schema: files is one row per stored content per tenant; holders says which
// tree (and job) stored it and when last; handed records hand-overs by a
// person; jobs and turns are the registry that decides which tree a job
// belongs to and which turns precede which; holds keep files past retention;
// tenants remembers the fingerprint of the key a tenant's files are sealed
// with, so a wrong key is named as such.
const schema = `
CREATE TABLE IF NOT EXISTS files (
	tenant TEXT NOT NULL, digest TEXT NOT NULL, size INTEGER NOT NULL,
	sealed INTEGER NOT NULL, key_id TEXT NOT NULL DEFAULT '', created INTEGER NOT NULL,
	PRIMARY KEY (tenant, digest)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS holders (
	tenant TEXT NOT NULL, digest TEXT NOT NULL, tree TEXT NOT NULL, job TEXT NOT NULL,
	stored INTEGER NOT NULL,
	PRIMARY KEY (tenant, digest, tree, job),
	FOREIGN KEY (tenant, digest) REFERENCES files (tenant, digest) ON DELETE CASCADE) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS holders_tree ON holders (tenant, tree);
CREATE INDEX IF NOT EXISTS holders_job ON holders (tenant, job);
CREATE TABLE IF NOT EXISTS handed (
	tenant TEXT NOT NULL, digest TEXT NOT NULL, tree TEXT NOT NULL, by TEXT NOT NULL, at INTEGER NOT NULL,
	PRIMARY KEY (tenant, digest, tree),
	FOREIGN KEY (tenant, digest) REFERENCES files (tenant, digest) ON DELETE CASCADE) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS handed_tree ON handed (tenant, tree);
CREATE TABLE IF NOT EXISTS jobs (
	tenant TEXT NOT NULL, id TEXT NOT NULL, tree TEXT NOT NULL, parent TEXT NOT NULL,
	started INTEGER NOT NULL, ended INTEGER,
	PRIMARY KEY (tenant, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS turns (
	tenant TEXT NOT NULL, tree TEXT NOT NULL, conversation TEXT NOT NULL, prev TEXT NOT NULL,
	PRIMARY KEY (tenant, tree)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS holds (
	tenant TEXT NOT NULL, name TEXT NOT NULL, tree TEXT NOT NULL, reason TEXT NOT NULL, created INTEGER NOT NULL,
	PRIMARY KEY (tenant, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tenants (
	tenant TEXT NOT NULL PRIMARY KEY, key_id TEXT NOT NULL) WITHOUT ROWID;
`

func (s *Store) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return s.dbErr(err, "read the store's version")
	}
	if v > schemaVersion {
		return errs.Unavailablef("files: the store in %s was written by a newer airlock (version %d, this one knows %d)", s.dir, v, schemaVersion)
	}
	return s.tx(ctx, "prepare the store", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
		return err
	})
}

// tx runs fn in an immediate (write-locked) transaction: every change of the
// metadata, and every rename or removal of a blob, happens under that one
// lock, so two processes never interleave a blob's arrival and its removal.
func (s *Store) tx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr(err, what)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		var ce interface{ ErrClass() errs.Class }
		if errors.As(err, &ce) {
			return err
		}
		return s.dbErr(err, what)
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr(err, what)
	}
	return nil
}

func (s *Store) dbErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errs.Wrap(errs.Timeout, err, "files: %s", what)
	}
	msg := err.Error()
	if strings.Contains(msg, "SQLITE_FULL") || strings.Contains(msg, "disk is full") || strings.Contains(msg, "database or disk is full") {
		return errs.Wrap(errs.Unavailable, err, "files: %s: the disk of the store is full (free space in %s)", what, s.dir)
	}
	return errs.Wrap(errs.Unavailable, err, "files: %s", what)
}

func ms(t time.Time) int64 { return t.UnixMilli() }
