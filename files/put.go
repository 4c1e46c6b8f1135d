package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// Info describes a stored file as one tree sees it.
type Info struct {
	Ref  Ref   `json:"ref"`
	Size int64 `json:"size"`
	// Sealed reports that the blob is encrypted with the tenant's key.
	Sealed bool `json:"sealed"`
	// Via is "stored" for a file the tree stored, "handed" for one a person
	// handed to it.
	Via string `json:"via"`
	// Stored is when the tree last stored it (for "handed", when it was
	// handed).
	Stored time.Time `json:"stored"`
	// Expires is when retention removes the tree's claim on it, unless a
	// hold keeps it; zero for a handed file, which lives as long as its
	// storing tree keeps it.
	Expires time.Time `json:"expires,omitzero"`
}

// errGone makes Put write a blob it had thought present: a collection in
// another process removed it between the look and the lock.
var errGone = errors.New("blob gone")

// Put keeps data as a file of sc's tree and returns its reference. Storing
// content the tree (or another tree of the tenant) already stored writes no
// new blob and restarts the tree's retention period. More than MaxSize bytes
// is an Invalid error and nothing is written.
func (s *Store) Put(ctx context.Context, sc Scope, data []byte) (Ref, error) {
	if err := sc.check(); err != nil {
		return Ref{}, err
	}
	if len(data) > MaxSize {
		return Ref{}, tooBig(int64(len(data)))
	}
	r := RefOf(data)
	key, kid, err := s.tenantKey(ctx, sc.Tenant)
	if err != nil {
		return Ref{}, err
	}
	for attempt := 0; ; attempt++ {
		err := s.put(ctx, sc, r, data, key, kid, attempt > 0)
		if errors.Is(err, errGone) && attempt == 0 {
			continue
		}
		if err != nil {
			return Ref{}, err
		}
		return r, nil
	}
}

// PutReader is Put for a reader: it reads at most MaxSize bytes and refuses
// a longer stream without keeping any of it. For a tenant whose files are
// not sealed the bytes go straight to a temporary file, hashed on the way,
// and are never held in memory whole.
func (s *Store) PutReader(ctx context.Context, sc Scope, rd io.Reader) (Ref, error) {
	if err := sc.check(); err != nil {
		return Ref{}, err
	}
	key, _, err := s.tenantKey(ctx, sc.Tenant)
	if err != nil {
		return Ref{}, err
	}
	if key != nil {
		var b bytes.Buffer
		if f, ok := rd.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() <= MaxSize {
				b.Grow(int(fi.Size()) + 1)
			}
		}
		n, err := b.ReadFrom(io.LimitReader(rd, MaxSize+1))
		if err != nil {
			return Ref{}, errs.Wrap(errs.Unavailable, err, "files: read the file to keep")
		}
		if n > MaxSize {
			return Ref{}, tooBig(n)
		}
		return s.Put(ctx, sc, b.Bytes())
	}
	dir := s.tenantDir(sc.Tenant)
	temp, r, n, err := streamTemp(dir, rd)
	if err != nil {
		return Ref{}, err
	}
	defer os.Remove(temp) // a no-op once it is renamed
	if n > MaxSize {
		return Ref{}, tooBig(n)
	}
	if err := s.commit(ctx, sc, r, n, "", temp, s.blobPath(sc.Tenant, r, false)); err != nil {
		return Ref{}, err
	}
	return r, nil
}

// copyChunk is how much streamTemp copies before handing the chunk to the
// hasher: big enough that the kernel moves it in few calls, small enough
// that hashing the last chunk adds little after the copy ends.
const copyChunk = 4 << 20

// streamTemp copies at most MaxSize+1 bytes of rd to a flushed temporary
// file in dir and returns its digest. The copy goes through io.CopyN, so the
// kernel moves the bytes when it can (copy_file_range from a file, splice
// from a pipe); each chunk, once in the temporary file, is read back from it
// and hashed in a second goroutine while the next chunk is copied. The
// digest is thus of the bytes that will be kept, and the store costs little
// more than a copy. A stream longer than MaxSize stops there; the caller
// refuses it by its size.
func streamTemp(dir string, rd io.Reader) (string, Ref, int64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", Ref{}, 0, diskErr(err, "create %s", dir)
	}
	f, err := os.CreateTemp(dir, tempPrefix+"stream-*")
	if err != nil {
		return "", Ref{}, 0, diskErr(err, "create a file in %s", dir)
	}
	name := f.Name()
	type span struct{ off, n int64 }
	spans := make(chan span, 4)
	hashed := make(chan error, 1)
	h := sha256.New()
	go func() {
		buf := make([]byte, hashChunk)
		var herr error
		for sp := range spans {
			for herr == nil && sp.n > 0 {
				k, err := f.ReadAt(buf[:min(sp.n, int64(len(buf)))], sp.off)
				h.Write(buf[:k])
				sp.off, sp.n = sp.off+int64(k), sp.n-int64(k)
				if err != nil && sp.n > 0 {
					herr = err
				}
			}
		}
		hashed <- herr
	}()
	var total int64
	var cerr error
	for total <= MaxSize {
		n, err := io.CopyN(f, rd, copyChunk)
		if n > 0 {
			spans <- span{total, n}
			total += n
		}
		if err != nil {
			if err != io.EOF {
				cerr = err
			}
			break
		}
	}
	close(spans)
	herr := <-hashed
	fail := func(err error, what string) (string, Ref, int64, error) {
		f.Close()
		os.Remove(name)
		return "", Ref{}, 0, diskErr(err, "%s %s", what, name)
	}
	var pe *os.PathError
	switch {
	case cerr != nil && !(errors.As(cerr, &pe) && pe.Path == name) && !errors.Is(cerr, syscall.ENOSPC):
		// Not an error of the file being written: the source failed.
		f.Close()
		os.Remove(name)
		return "", Ref{}, 0, errs.Wrap(errs.Unavailable, cerr, "files: read the file to keep")
	case cerr != nil:
		return fail(cerr, "copy into")
	case herr != nil:
		return fail(herr, "read back")
	}
	if total <= MaxSize {
		if err := f.Sync(); err != nil {
			return fail(err, "flush")
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", Ref{}, 0, diskErr(err, "close %s", name)
	}
	var r Ref
	h.Sum(r.sum[:0])
	return name, r, total, nil
}

func tooBig(n int64) error {
	return errs.Invalidf("files: the file is more than %d MiB (%s), the most a file may be; nothing was kept (store a smaller file)", MaxSize>>20, sizeText(n))
}

func sizeText(n int64) string {
	if n > MaxSize {
		return fmt.Sprintf("at least %d bytes", n)
	}
	return fmt.Sprintf("%d bytes", n)
}

func (s *Store) put(ctx context.Context, sc Scope, r Ref, data, key []byte, kid string, force bool) error {
	sealed := key != nil
	final := s.blobPath(sc.Tenant, r, sealed)
	write := force || !s.haveBlob(ctx, sc.Tenant, r, key, kid)
	var temp string
	if write {
		blob := data
		if sealed {
			var err error
			if blob, err = seal(key, sc.Tenant, r, data); err != nil {
				return err
			}
		}
		var err error
		if temp, err = writeTemp(final, blob); err != nil {
			return err
		}
		defer os.Remove(temp) // a no-op once it is renamed
	}
	return s.commit(ctx, sc, r, int64(len(data)), kid, temp, final)
}

// commit, under the write lock, moves a flushed temporary blob (if any) to
// its name and records that sc's tree stored r. With no temporary blob the
// named blob must still be there: a collection may have removed it since
// Put looked, and then Put writes it after all.
func (s *Store) commit(ctx context.Context, sc Scope, r Ref, size int64, kid, temp, final string) error {
	sealed := kid != ""
	want := size
	if sealed {
		want += int64(sealOverhead)
	}
	now := ms(s.now())
	return s.tx(ctx, "keep "+r.String(), func(tx *sql.Tx) error {
		if sealed {
			if err := checkTenantKey(ctx, tx, sc.Tenant, kid); err != nil {
				return err
			}
		} else {
			// Another process may have sealed the tenant's first file since
			// Put looked: a file in the clear must not join it.
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM tenants WHERE tenant = ?", sc.Tenant).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return missingKey(sc.Tenant)
			}
		}
		if temp != "" {
			if err := place(temp, final); err != nil {
				return err
			}
			temp = ""
		} else if fi, err := os.Stat(final); err != nil || fi.Size() != want {
			return errGone
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO files (tenant, digest, size, sealed, key_id, created) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, digest) DO UPDATE SET sealed = excluded.sealed, key_id = excluded.key_id`,
			sc.Tenant, r.Hex(), size, sealed, kid, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO holders (tenant, digest, tree, job, stored) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tenant, digest, tree, job) DO UPDATE SET stored = max(stored, excluded.stored)`,
			sc.Tenant, r.Hex(), sc.Tree, sc.job(), now)
		return err
	})
}

// haveBlob reports whether the file is already kept in the wanted form and
// its blob is whole, so Put need not write it again. The blob is read and
// checked, not merely found: storing the content again is how a damaged
// blob is repaired.
func (s *Store) haveBlob(ctx context.Context, tenant string, r Ref, key []byte, kid string) bool {
	var f fileRow
	err := s.db.QueryRowContext(ctx, "SELECT size, sealed, key_id FROM files WHERE tenant = ? AND digest = ?", tenant, r.Hex()).Scan(&f.size, &f.sealed, &f.kid)
	if err != nil || f.sealed != (key != nil) || f.kid != kid {
		return false
	}
	_, err = s.readBlob(tenant, r, f, key)
	return err == nil
}

// checkTenantKey records the tenant's key fingerprint on its first sealed
// file and refuses a different key afterwards.
func checkTenantKey(ctx context.Context, tx *sql.Tx, tenant, kid string) error {
	if _, err := tx.ExecContext(ctx, "INSERT INTO tenants (tenant, key_id) VALUES (?, ?) ON CONFLICT DO NOTHING", tenant, kid); err != nil {
		return err
	}
	var have string
	if err := tx.QueryRowContext(ctx, "SELECT key_id FROM tenants WHERE tenant = ?", tenant).Scan(&have); err != nil {
		return err
	}
	if have != kid {
		return wrongKey(tenant)
	}
	return nil
}

func wrongKey(tenant string) error {
	return errs.Unavailablef("files: the key configured for tenant %q is not the key its files were sealed with (configure the original key)", tenant)
}

func missingKey(tenant string) error {
	return errs.Unavailablef("files: the files of tenant %q are sealed and no key is configured for it (name the key file or variable they were sealed with)", tenant)
}

// tenantKey returns the key to seal new files of tenant with (nil for none)
// and its fingerprint, refusing a missing or changed key once the tenant's
// files are sealed.
func (s *Store) tenantKey(ctx context.Context, tenant string) ([]byte, string, error) {
	var key []byte
	if s.opt.Keys != nil {
		k, err := s.opt.Keys(tenant)
		if err != nil {
			return nil, "", err
		}
		if k != nil && len(k) != 32 {
			return nil, "", errs.Unavailablef("files: the key for tenant %q is %d bytes, want 32", tenant, len(k))
		}
		key = k
	}
	var have string
	err := s.db.QueryRowContext(ctx, "SELECT key_id FROM tenants WHERE tenant = ?", tenant).Scan(&have)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, "", s.dbErr(err, "read the tenant's key record")
	}
	switch {
	case key == nil && have != "":
		return nil, "", missingKey(tenant)
	case key == nil:
		return nil, "", nil
	case have != "" && have != keyID(key):
		return nil, "", wrongKey(tenant)
	}
	return key, keyID(key), nil
}

// notFound is the one answer for a file sc may not read, whether it was
// never stored, belongs to another tree or another tenant, or was erased:
// the message carries nothing but the reference the caller gave.
func notFound(r Ref) error {
	return errs.NotFoundf("files: %s: not found (no file by that digest that this job may read)", r)
}

// damaged is the answer for a blob that no longer matches its digest.
func damaged(r Ref, why string) error {
	return errs.New(errs.Internal, "files: %s is damaged in the store (%s); it cannot be read (restore it by storing the same content again)", r, why)
}

type fileRow struct {
	size   int64
	sealed bool
	kid    string
}

// access is the single query that decides whether sc may read r: the tree
// stored it, an earlier turn of its conversation branch stored it, or a
// person handed it to the tree. Files of other trees and tenants, files
// never stored, and claims past retention that no hold keeps (whether or not
// a collection has removed them yet) all give no row.
const access = `
WITH RECURSIVE chain(t) AS (
	SELECT ?3
	UNION
	SELECT turns.prev FROM turns JOIN chain ON turns.tree = chain.t WHERE turns.tenant = ?1 AND turns.prev <> ''
),
live(tree) AS (
	SELECT h.tree FROM holders h WHERE h.tenant = ?1 AND h.digest = ?2 AND (h.stored >= ?4
		OR EXISTS (SELECT 1 FROM holds k WHERE k.tenant = ?1 AND (k.tree = '' OR k.tree = h.tree)))
)
SELECT f.size, f.sealed, f.key_id FROM files f
WHERE f.tenant = ?1 AND f.digest = ?2 AND (
	EXISTS (SELECT 1 FROM live WHERE live.tree IN (SELECT t FROM chain))
	OR (EXISTS (SELECT 1 FROM handed d WHERE d.tenant = ?1 AND d.digest = ?2 AND d.tree = ?3)
		AND EXISTS (SELECT 1 FROM live)))`

func (s *Store) readable(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, sc Scope, r Ref) (fileRow, error) {
	var f fileRow
	err := q.QueryRowContext(ctx, access, sc.Tenant, r.Hex(), sc.Tree, ms(s.now().Add(-s.keep))).Scan(&f.size, &f.sealed, &f.kid)
	if errors.Is(err, sql.ErrNoRows) {
		return f, notFound(r)
	}
	if err != nil {
		return f, s.dbErr(err, "look up "+r.String())
	}
	return f, nil
}

// Get returns the bytes of r if sc may read it. The bytes are checked
// against the digest before they are returned: a blob that was changed or
// cut short on disk is an error, never other bytes.
func (s *Store) Get(ctx context.Context, sc Scope, r Ref) ([]byte, error) {
	f, key, err := s.opening(ctx, sc, r)
	if err != nil {
		return nil, err
	}
	return s.readBlob(sc.Tenant, r, f, key)
}

// GetTo writes the bytes of r, if sc may read it, to w, and returns how many
// it wrote. Like Get it checks them against the digest, and w keeps the
// whole file or nothing of it:
//
//   - into a regular file open at its offset (not in append mode), the clear
//     bytes of an unsealed file stream as they are read and hashed, and the
//     digest is checked when the last of them is written. When that check
//     (or anything else) fails, GetTo cuts the file off at the offset it
//     had, puts the offset back there, and returns the error. Until
//     GetTo returns, the file's new bytes are unchecked: a caller must not
//     let anyone read them before a nil error, and should write to a file
//     only it can open and remove that file on an error (Materialize does);
//   - into any other writer (a pipe, standard output, a buffer), and for a
//     sealed file, the bytes are read and checked whole first and written
//     only when they pass, through a buffer the store reuses.
func (s *Store) GetTo(ctx context.Context, sc Scope, r Ref, w io.Writer) (int64, error) {
	f, key, err := s.opening(ctx, sc, r)
	if err != nil {
		return 0, err
	}
	if out, start, ok := rewindable(w); ok && !f.sealed {
		return s.streamBlob(sc.Tenant, r, f.size, out, start)
	}
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.bufs.Put(bp)
	data, err := s.readBlobInto(*bp, sc.Tenant, r, f, key)
	if err != nil {
		return 0, err
	}
	if cap(data) > cap(*bp) {
		*bp = data[:0]
	}
	n, err := w.Write(data)
	if err != nil {
		return int64(n), errs.Wrap(errs.Unavailable, err, "files: write %s", r)
	}
	return int64(n), nil
}

// opening checks that sc may read r and returns its row with the key to
// open it (nil for a clear file).
func (s *Store) opening(ctx context.Context, sc Scope, r Ref) (fileRow, []byte, error) {
	if err := sc.check(); err != nil {
		return fileRow{}, nil, err
	}
	if r.IsZero() {
		return fileRow{}, nil, errs.Invalidf("files: no file reference given")
	}
	f, err := s.readable(ctx, s.db, sc, r)
	if err != nil {
		return fileRow{}, nil, err
	}
	if !f.sealed {
		return f, nil, nil
	}
	if s.opt.Keys == nil {
		return fileRow{}, nil, missingKey(sc.Tenant)
	}
	key, err := s.opt.Keys(sc.Tenant)
	if err != nil {
		return fileRow{}, nil, err
	}
	if key == nil {
		return fileRow{}, nil, missingKey(sc.Tenant)
	}
	if keyID(key) != f.kid {
		return fileRow{}, nil, wrongKey(sc.Tenant)
	}
	return f, key, nil
}

// readBlob reads and checks a file's blob into a new buffer.
func (s *Store) readBlob(tenant string, r Ref, f fileRow, key []byte) ([]byte, error) {
	return s.readBlobInto(nil, tenant, r, f, key)
}

// readBlobInto reads and checks a file's blob into buf when it is big
// enough (else into a new buffer) and returns the file's bytes within it.
func (s *Store) readBlobInto(buf []byte, tenant string, r Ref, f fileRow, key []byte) ([]byte, error) {
	path := s.blobPath(tenant, r, f.sealed)
	want := f.size
	if f.sealed {
		want += int64(sealOverhead)
	}
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, damaged(r, "its blob is missing")
	}
	if err != nil {
		return nil, diskErr(err, "open %s", path)
	}
	defer fh.Close()
	// Read one byte more than the blob should have, to notice a blob that
	// grew as well as one that shrank; a clear blob is hashed as it is read.
	blob := buf
	if int64(cap(blob)) < want+1 {
		blob = make([]byte, want+1)
	}
	blob = blob[:want+1]
	n, sum, err := readAllHashing(fh, blob)
	if err != nil {
		return nil, diskErr(err, "read %s", path)
	}
	if int64(n) != want {
		return nil, damaged(r, fmt.Sprintf("its blob is %d bytes, want %d", n, want))
	}
	data := blob[:n]
	if f.sealed {
		var ok bool
		if data, ok = open(key, tenant, r, data); !ok {
			return nil, damaged(r, "its sealed blob does not authenticate")
		}
	}
	if f.sealed {
		sum = sha256.Sum256(data)
	}
	if sum != r.sum {
		return nil, damaged(r, "its bytes do not match the digest")
	}
	return data, nil
}

// Stat returns what sc may know of r, with the same not-found answer as Get.
func (s *Store) Stat(ctx context.Context, sc Scope, r Ref) (Info, error) {
	if err := sc.check(); err != nil {
		return Info{}, err
	}
	f, err := s.readable(ctx, s.db, sc, r)
	if err != nil {
		return Info{}, err
	}
	return Info{Ref: r, Size: f.size, Sealed: f.sealed}, nil
}

// List returns the files sc's tree stored or was handed, newest first.
func (s *Store) List(ctx context.Context, sc Scope) ([]Info, error) {
	if err := sc.check(); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT f.digest, f.size, f.sealed, 'stored', max(h.stored) FROM holders h JOIN files f USING (tenant, digest)
		WHERE h.tenant = ?1 AND h.tree = ?2 GROUP BY f.digest
		UNION ALL
		SELECT f.digest, f.size, f.sealed, 'handed', d.at FROM handed d JOIN files f USING (tenant, digest)
		WHERE d.tenant = ?1 AND d.tree = ?2
		ORDER BY 5 DESC, 1`, sc.Tenant, sc.Tree)
	if err != nil {
		return nil, s.dbErr(err, "list files")
	}
	defer rows.Close()
	var out []Info
	for rows.Next() {
		var hexd string
		var at int64
		var in Info
		if err := rows.Scan(&hexd, &in.Size, &in.Sealed, &in.Via, &at); err != nil {
			return nil, s.dbErr(err, "list files")
		}
		if in.Ref, err = ParseRef(RefPrefix + hexd); err != nil {
			return nil, err
		}
		in.Stored = time.UnixMilli(at).UTC()
		if in.Via == "stored" {
			in.Expires = in.Stored.Add(s.keep)
		}
		out = append(out, in)
	}
	return out, s.dbErr(rows.Err(), "list files")
}
