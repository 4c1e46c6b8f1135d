package files

import (
	"context"
	"os"
	"path/filepath"

	"github.com/airlock-run/airlock/errs"
)

// Materialize writes the file r, if sc may read it, to dir as a read-only
// file named by its digest, and returns its path. The bytes are the verified
// plain bytes (a sealed file is opened here), so the path can be bound
// read-only into a tool's box. A ref sc may not read gets the same
// "not found" as Get, and nothing is written.
func (s *Store) Materialize(ctx context.Context, sc Scope, r Ref, dir string) (string, error) {
	if dir == "" {
		return "", errs.Invalidf("files: no directory to put %s in", r)
	}
	// Check access before touching the directory, so a refused reference
	// leaves nothing behind.
	if _, _, err := s.opening(ctx, sc, r); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", diskErr(err, "create %s", dir)
	}
	final := filepath.Join(dir, r.Hex())
	f, err := os.CreateTemp(dir, tempPrefix+r.Hex()+"-*")
	if err != nil {
		return "", diskErr(err, "create a file in %s", dir)
	}
	temp := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(temp)
		return "", err
	}
	if _, err := s.GetTo(ctx, sc, r, f); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o444); err != nil {
		return fail(diskErr(err, "make %s read-only", temp))
	}
	if err := f.Close(); err != nil {
		os.Remove(temp)
		return "", diskErr(err, "close %s", temp)
	}
	if err := place(temp, final); err != nil {
		return "", err
	}
	return final, nil
}
