package files

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// Hold is a legal hold: while it stands, the files of its tree (or of the
// whole tenant when Tree is empty) outlive retention and cannot be erased.
type Hold struct {
	Name    string    `json:"name"`
	Tenant  string    `json:"tenant"`
	Tree    string    `json:"tree,omitempty"`
	Reason  string    `json:"reason"`
	Created time.Time `json:"created"`
}

// PlaceHold places a legal hold named name on tree of tenant ("" for every
// tree of the tenant).
func (s *Store) PlaceHold(ctx context.Context, tenant, name, tree, reason string) error {
	if err := checkName("tenant", tenant); err != nil {
		return err
	}
	if err := checkName("hold", name); err != nil {
		return err
	}
	if tree != "" {
		if err := checkName("tree", tree); err != nil {
			return err
		}
	}
	return s.tx(ctx, "place hold "+name, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO holds (tenant, name, tree, reason, created) VALUES (?, ?, ?, ?, ?)",
			tenant, name, tree, reason, ms(s.now()))
		if err != nil && strings.Contains(err.Error(), "UNIQUE") {
			return errs.Invalidf("files: a hold named %q already stands (release it first or choose another name)", name)
		}
		return err
	})
}

// ReleaseHold releases the hold named name. Files it kept past retention go
// at the next collection.
func (s *Store) ReleaseHold(ctx context.Context, tenant, name string) error {
	return s.tx(ctx, "release hold "+name, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM holds WHERE tenant = ? AND name = ?", tenant, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("files: no hold named %q", name)
		}
		return nil
	})
}

// Holds lists tenant's holds by name.
func (s *Store) Holds(ctx context.Context, tenant string) ([]Hold, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, tree, reason, created FROM holds WHERE tenant = ? ORDER BY name", tenant)
	if err != nil {
		return nil, s.dbErr(err, "list holds")
	}
	defer rows.Close()
	var out []Hold
	for rows.Next() {
		h := Hold{Tenant: tenant}
		var at int64
		if err := rows.Scan(&h.Name, &h.Tree, &h.Reason, &at); err != nil {
			return nil, s.dbErr(err, "list holds")
		}
		h.Created = time.UnixMilli(at).UTC()
		out = append(out, h)
	}
	return out, s.dbErr(rows.Err(), "list holds")
}

// GCReport says what a collection removed.
type GCReport struct {
	// Expired counts the claims of trees whose retention ran out.
	Expired int `json:"expired"`
	// Removed counts the files no tree holds any more, blob and metadata.
	Removed int `json:"removed"`
	// Swept counts blobs and temporary files on disk that no metadata
	// names: left by a crash, or by a removal that stopped half-way.
	Swept int `json:"swept"`
}

// held selects holder rows a hold covers; unheld the others.
const (
	held   = `EXISTS (SELECT 1 FROM holds k WHERE k.tenant = holders.tenant AND (k.tree = '' OR k.tree = holders.tree))`
	unheld = "NOT " + held
)

// GC removes every tree's claim on a file it last stored longer than the
// retention period ago (unless a hold covers the tree), then the files no
// tree holds, then blobs and temporary files no metadata names.
func (s *Store) GC(ctx context.Context) (GCReport, error) {
	var rep GCReport
	cutoff := ms(s.now().Add(-s.keep))
	err := s.tx(ctx, "collect expired files", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM holders WHERE stored < ? AND "+unheld, cutoff)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		rep.Expired = int(n)
		rep.Removed, err = dropUnheld(ctx, tx, "")
		return err
	})
	if err != nil {
		return rep, err
	}
	rep.Swept, err = s.sweep(ctx, "")
	return rep, err
}

// dropUnheld deletes the files (of tenant, or of all tenants for "") that no
// tree holds any more; their hand-overs go with them.
func dropUnheld(ctx context.Context, tx *sql.Tx, tenant string) (int, error) {
	q := "DELETE FROM files WHERE NOT EXISTS (SELECT 1 FROM holders h WHERE h.tenant = files.tenant AND h.digest = files.digest)"
	args := []any{}
	if tenant != "" {
		q += " AND tenant = ?"
		args = append(args, tenant)
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// sweep removes, under the write lock, the blobs on disk that no metadata
// row names (of one tenant, or all for ""), and temporary files older than
// an hour. Metadata is always removed before its blob, so a crash between
// the two leaves a blob nobody names, which the next sweep removes, and
// never a name without its blob.
func (s *Store) sweep(ctx context.Context, tenant string) (int, error) {
	names := map[string]string{} // tenant directory -> tenant
	swept := 0
	err := s.tx(ctx, "sweep unnamed blobs", func(tx *sql.Tx) error {
		swept = 0
		q, args := "SELECT DISTINCT tenant FROM files", []any{}
		if tenant != "" {
			q, args = "SELECT ? ", []any{tenant}
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				rows.Close()
				return err
			}
			names[filepath.Base(s.tenantDir(t))] = t
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		root := filepath.Join(s.dir, "blobs")
		if tenant != "" {
			root = s.tenantDir(tenant)
		}
		now := s.now()
		return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			base := d.Name()
			if strings.HasPrefix(base, tempPrefix) {
				fi, err := d.Info()
				if err == nil && now.Sub(fi.ModTime()) > staleTemp {
					if os.Remove(path) == nil {
						swept++
					}
				}
				return nil
			}
			rel, _ := filepath.Rel(filepath.Join(s.dir, "blobs"), path)
			t, known := names[strings.SplitN(rel, string(filepath.Separator), 2)[0]]
			hexd, sealed := strings.CutSuffix(base, ".sealed")
			keep := false
			if known {
				if r, err := ParseRef(RefPrefix + hexd); err == nil {
					var n int
					if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM files WHERE tenant = ? AND digest = ? AND sealed = ?", t, r.Hex(), sealed).Scan(&n); err != nil {
						return err
					}
					keep = n > 0
				}
			}
			if !keep && os.Remove(path) == nil {
				swept++
			}
			return nil
		})
	})
	return swept, err
}

// Erasure is what to erase: one job's files, one tree's, or a whole
// tenant's (Job and Tree empty).
type Erasure struct {
	Tenant string
	Tree   string
	Job    string
	// By names who asked, for the audit event.
	By string
}

// Erase removes the files of a job, a tree or a tenant, blob and metadata,
// and records a files.erased event. A file another job or tree also stored
// stays for that holder. A legal hold over any of them refuses the whole
// erasure. Erasing a tenant also forgets its jobs, turns and key record.
func (s *Store) Erase(ctx context.Context, e Erasure) (int, error) {
	if err := checkName("tenant", e.Tenant); err != nil {
		return 0, err
	}
	if e.Tree != "" && e.Job != "" {
		return 0, errs.Invalidf("files: erase a job or a tree, not both")
	}
	var where string
	args := []any{e.Tenant}
	switch {
	case e.Job != "":
		where, args = "tenant = ? AND job = ?", append(args, e.Job)
	case e.Tree != "":
		where, args = "tenant = ? AND tree = ?", append(args, e.Tree)
	default:
		where = "tenant = ?"
	}
	removed := 0
	err := s.tx(ctx, "erase files", func(tx *sql.Tx) error {
		var hold string
		err := tx.QueryRowContext(ctx, "SELECT k.name FROM holds k WHERE k.tenant = ? AND (k.tree = '' OR k.tree IN (SELECT tree FROM holders WHERE "+where+")) ORDER BY k.name LIMIT 1",
			append([]any{e.Tenant}, args...)...).Scan(&hold)
		if err == nil {
			return errs.New(errs.Denied, "files: the legal hold %q covers these files; nothing was erased (release the hold first)", hold)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM holders WHERE "+where, args...); err != nil {
			return err
		}
		if e.Job == "" {
			if _, err := tx.ExecContext(ctx, "DELETE FROM handed WHERE "+where, args...); err != nil {
				return err
			}
		}
		if removed, err = dropUnheld(ctx, tx, e.Tenant); err != nil {
			return err
		}
		if e.Job == "" && e.Tree == "" {
			for _, t := range []string{"files", "jobs", "turns", "tenants"} {
				if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE tenant = ?", e.Tenant); err != nil {
					return err
				}
			}
		}
		return s.audit(ctx, Event{Type: EventErased, Tenant: e.Tenant, Tree: e.Tree, Job: e.Job, By: e.By, Count: removed, At: s.now()})
	})
	if err != nil {
		return 0, err
	}
	if _, err := s.sweep(ctx, e.Tenant); err != nil {
		return removed, err
	}
	if e.Job == "" && e.Tree == "" {
		os.RemoveAll(s.tenantDir(e.Tenant))
	}
	return removed, nil
}

// Problem is one file whose blob does not match its metadata.
type Problem struct {
	Tenant string `json:"tenant"`
	Ref    Ref    `json:"ref"`
	What   string `json:"what"`
}

// Verify reads every file's blob and checks it against its digest (a sealed
// file whose tenant has no usable key is checked by size only). It returns
// the number of files checked and the problems found.
func (s *Store) Verify(ctx context.Context) (int, []Problem, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT tenant, digest, size, sealed, key_id FROM files ORDER BY tenant, digest")
	if err != nil {
		return 0, nil, s.dbErr(err, "list files")
	}
	type item struct {
		tenant string
		r      Ref
		f      fileRow
	}
	var items []item
	for rows.Next() {
		var it item
		var hexd string
		if err := rows.Scan(&it.tenant, &hexd, &it.f.size, &it.f.sealed, &it.f.kid); err != nil {
			rows.Close()
			return 0, nil, s.dbErr(err, "list files")
		}
		if it.r, err = ParseRef(RefPrefix + hexd); err != nil {
			rows.Close()
			return 0, nil, err
		}
		items = append(items, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, nil, s.dbErr(err, "list files")
	}
	var probs []Problem
	for _, it := range items {
		var key []byte
		if it.f.sealed && s.opt.Keys != nil {
			if k, err := s.opt.Keys(it.tenant); err == nil && k != nil && keyID(k) == it.f.kid {
				key = k
			}
		}
		if it.f.sealed && key == nil {
			fi, err := os.Stat(s.blobPath(it.tenant, it.r, true))
			if err != nil || fi.Size() != it.f.size+int64(sealOverhead) {
				probs = append(probs, Problem{it.tenant, it.r, "sealed blob missing or of the wrong size"})
			}
			continue
		}
		if _, err := s.readBlob(it.tenant, it.r, it.f, key); err != nil {
			probs = append(probs, Problem{it.tenant, it.r, err.Error()})
		}
	}
	return len(items), probs, nil
}
