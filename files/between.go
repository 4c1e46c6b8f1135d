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
	data, err := s.Get(ctx, sc, r)
	if err != nil {
		return "", err
	}
	if dir == "" {
		return "", errs.Invalidf("files: no directory to put %s in", r)
	}
	final := filepath.Join(dir, r.Hex())
	temp, err := writeTemp(final, data)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(temp, 0o444); err != nil {
		os.Remove(temp)
		return "", diskErr(err, "make %s read-only", temp)
	}
	if err := place(temp, final); err != nil {
		return "", err
	}
	return final, nil
}
