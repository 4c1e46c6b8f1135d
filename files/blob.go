package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/airlock-run/airlock/errs"
)

// tenantDir is the blob directory of a tenant. It is named by a hash of the
// tenant so that any tenant name, however spelled, is a safe path, and blobs
// are never shared between tenants (sharing would let one tenant learn that
// another holds a file by how fast a write returns).
func (s *Store) tenantDir(tenant string) string {
	h := sha256.Sum256([]byte("airlock tenant\x00" + tenant))
	return filepath.Join(s.dir, "blobs", hex.EncodeToString(h[:10]))
}

// blobPath is where a file's blob lives. Sealed and clear blobs have
// different names, so rewriting a file in the other form never replaces the
// blob the metadata still points at.
func (s *Store) blobPath(tenant string, r Ref, sealed bool) string {
	h := r.Hex()
	name := h
	if sealed {
		name += ".sealed"
	}
	return filepath.Join(s.tenantDir(tenant), h[:2], name)
}

const tempPrefix = ".tmp-"

// writeTemp writes data to a new temporary file in the directory of final
// and flushes it to the disk. On any failure nothing is left behind.
func writeTemp(final string, data []byte) (string, error) {
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", diskErr(err, "create %s", dir)
	}
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(final)+"-*")
	if err != nil {
		return "", diskErr(err, "create a file in %s", dir)
	}
	name := f.Name()
	fail := func(err error, what string) (string, error) {
		f.Close()
		os.Remove(name)
		return "", diskErr(err, "%s %s", what, name)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err, "write")
	}
	if err := f.Sync(); err != nil {
		return fail(err, "flush")
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", diskErr(err, "close %s", name)
	}
	return name, nil
}

// place renames a flushed temporary file to its final name and flushes the
// directory, so after a crash the name points at the whole file or at the
// file it replaced, never at part of one.
func place(temp, final string) error {
	if err := ensureDir(filepath.Dir(final)); err != nil {
		os.Remove(temp)
		return err
	}
	if err := os.Rename(temp, final); err != nil {
		os.Remove(temp)
		return diskErr(err, "rename %s", temp)
	}
	return syncDir(filepath.Dir(final))
}

// ensureDir creates dir and any missing parents, flushing each parent that
// got a new entry: a blob renamed into a directory whose own name was never
// flushed could vanish with it in a crash.
func ensureDir(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := ensureDir(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return diskErr(err, "create %s", dir)
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return diskErr(err, "open %s", dir)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return diskErr(err, "flush %s", dir)
	}
	return nil
}

func diskErr(err error, format string, a ...any) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		// The cause and the temporary file's name add nothing a person can act
		// on; the one line says what happened and what to do.
		return errs.Unavailablef("files: the disk of the store is full; nothing was kept (free space and retry)")
	}
	return errs.Wrap(errs.Unavailable, err, "files: "+format, a...)
}
