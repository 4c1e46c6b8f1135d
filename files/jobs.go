package files

import (
	"context"
	"database/sql"
	"errors"

	"github.com/airlock-run/airlock/errs"
)

// StartJob registers job id of tenant as started and returns the tree it
// belongs to: the parent's tree when parent is set, else a new tree named id.
//
// So that a new job never inherits an old job's files, starting a tree under
// an id whose earlier job has ended while its tree still holds files is
// refused (files handed to the id count), and so is an id that names a
// conversation's turn: hand files to a job after starting it. Starting an id
// whose job still runs follows that job: the same tree comes back and no
// files are handed to anyone.
func (s *Store) StartJob(ctx context.Context, tenant, id, parent string) (string, error) {
	if err := checkName("tenant", tenant); err != nil {
		return "", err
	}
	if err := checkName("job", id); err != nil {
		return "", err
	}
	if parent != "" {
		if err := checkName("parent job", parent); err != nil {
			return "", err
		}
	}
	var tree string
	err := s.tx(ctx, "start job "+id, func(tx *sql.Tx) error {
		var have string
		var ended sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT tree, ended FROM jobs WHERE tenant = ? AND id = ?", tenant, id).Scan(&have, &ended)
		switch {
		case err == nil && !ended.Valid:
			tree = have
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if parent != "" {
			var pended sql.NullInt64
			err := tx.QueryRowContext(ctx, "SELECT tree, ended FROM jobs WHERE tenant = ? AND id = ?", tenant, parent).Scan(&tree, &pended)
			if errors.Is(err, sql.ErrNoRows) {
				return errs.NotFoundf("files: start job %q: its parent job %q is not known", id, parent)
			}
			if err != nil {
				return err
			}
		} else {
			tree = id
		}
		var turn, holds int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM turns WHERE tenant = ? AND tree = ?", tenant, id).Scan(&turn); err != nil {
			return err
		}
		if turn > 0 {
			return errs.Invalidf("files: start job %q: the id names a turn of a conversation (choose a new id)", id)
		}
		// Claims past retention no longer hold files, collected or not
		// (unless a hold keeps them), as for reads.
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM holders WHERE tenant = ? AND tree = ? AND (stored >= ? OR "+held+")",
			tenant, id, ms(s.now().Add(-s.keep))).Scan(&holds); err != nil {
			return err
		}
		// Files handed to the id count too: handed before its job started,
		// they would go to whoever starts it. Hand files after the start.
		var handed int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM handed WHERE tenant = ? AND tree = ?", tenant, id).Scan(&handed); err != nil {
			return err
		}
		if holds+handed > 0 {
			return errs.Invalidf("files: start job %q: an ended job tree of that id still holds files (choose a new id, or erase that tree's files first)", id)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO jobs (tenant, id, tree, parent, started, ended) VALUES (?, ?, ?, ?, ?, NULL)
			ON CONFLICT (tenant, id) DO UPDATE SET tree = excluded.tree, parent = excluded.parent, started = excluded.started, ended = NULL`,
			tenant, id, tree, parent, ms(s.now()))
		return err
	})
	return tree, err
}

// EndJob records that job id has ended. Its tree keeps its files until
// retention or erasure removes them.
func (s *Store) EndJob(ctx context.Context, tenant, id string) error {
	return s.tx(ctx, "end job "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE jobs SET ended = ? WHERE tenant = ? AND id = ? AND ended IS NULL", ms(s.now()), tenant, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("files: end job %q: no such running job", id)
		}
		return nil
	})
}

// TreeOf returns the tree job id belongs to.
func (s *Store) TreeOf(ctx context.Context, tenant, id string) (string, error) {
	var tree string
	err := s.db.QueryRowContext(ctx, "SELECT tree FROM jobs WHERE tenant = ? AND id = ?", tenant, id).Scan(&tree)
	if errors.Is(err, sql.ErrNoRows) {
		return "", errs.NotFoundf("files: no job %q", id)
	}
	return tree, s.dbErr(err, "look up job "+id)
}

// AddTurn records that tree is a turn of conversation that follows turn
// after ("" for a conversation's first turn). A turn reads the files of
// every turn before it on its branch: forking a conversation from turn T is
// adding a turn (of a new conversation) after T, which then reads the files
// up to T and never those of T's later turns or of other branches.
func (s *Store) AddTurn(ctx context.Context, tenant, conversation, tree, after string) error {
	for _, c := range []struct{ what, v string }{{"tenant", tenant}, {"conversation", conversation}, {"tree", tree}} {
		if err := checkName(c.what, c.v); err != nil {
			return err
		}
	}
	if after == tree {
		return errs.Invalidf("files: a turn cannot follow itself")
	}
	return s.tx(ctx, "add a turn", func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM turns WHERE tenant = ? AND tree = ?", tenant, tree).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errs.Invalidf("files: %q is already a turn of a conversation", tree)
		}
		if after != "" {
			// The turn before must exist already, so the chain of turns
			// can never loop.
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM turns WHERE tenant = ? AND tree = ?", tenant, after).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return errs.NotFoundf("files: no turn %q to follow", after)
			}
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO turns (tenant, tree, conversation, prev) VALUES (?, ?, ?, ?)", tenant, tree, conversation, after)
		return err
	})
}

// Hand gives tree `to` read access to the files among refs that the person
// acting (by) may read through scope from, and records the hand-over as a
// job.files_handed event. Files the person may not read are left out
// silently (the job's tool then gets "not found" for them); the returned
// slice holds the ones handed. When the event cannot be recorded nothing is
// handed. Whether the person may hand files at all (the content permission)
// is for the caller to decide before calling.
func (s *Store) Hand(ctx context.Context, from Scope, to string, refs []Ref, by string) ([]Ref, error) {
	if err := from.check(); err != nil {
		return nil, err
	}
	if err := checkName("tree", to); err != nil {
		return nil, err
	}
	if err := checkName("person", by); err != nil {
		return nil, err
	}
	var handed []Ref
	err := s.tx(ctx, "hand files", func(tx *sql.Tx) error {
		handed = handed[:0]
		at := s.now()
		for _, r := range refs {
			if _, err := s.readable(ctx, tx, from, r); err != nil {
				if errs.Is(err, errs.NotFound) {
					continue
				}
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO handed (tenant, digest, tree, by, at) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (tenant, digest, tree) DO UPDATE SET by = excluded.by, at = excluded.at`,
				from.Tenant, r.Hex(), to, by, ms(at)); err != nil {
				return err
			}
			handed = append(handed, r)
		}
		return s.audit(ctx, Event{Type: EventHanded, Tenant: from.Tenant, Tree: to, By: by,
			Refs: refStrings(handed), Omitted: len(refs) - len(handed), At: at})
	})
	if err != nil {
		return nil, err
	}
	return handed, nil
}

func (s *Store) audit(ctx context.Context, e Event) error {
	if s.opt.Audit == nil {
		return nil
	}
	if err := s.opt.Audit(ctx, e); err != nil {
		return errs.Wrap(errs.Unavailable, err, "files: record the %s event", e.Type)
	}
	return nil
}

func refStrings(rs []Ref) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}
