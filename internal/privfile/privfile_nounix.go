//go:build !unix

package privfile

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock-run/airlock/errs"
)

// Options: see the unix version.
type Options struct {
	BoxWritable []string
	MakeDirs    bool
}

func unsupported(path string) error {
	return errs.Unavailablef("privfile: %s: writing airlock's own files safely needs a Unix system", path)
}

// WriteFile is not supported on this system.
func WriteFile(path string, _ []byte, _ fs.FileMode, _ Options) error { return unsupported(path) }

// OpenAppend is not supported on this system.
func OpenAppend(path string, _ int, _ fs.FileMode, _ Options) (*os.File, error) {
	return nil, unsupported(path)
}

// MkdirAll is not supported on this system.
func MkdirAll(path string, _ Options) error { return unsupported(path) }

// ReadFile is not supported on this system.
func ReadFile(path string, _ int64, _ Options) ([]byte, error) { return nil, unsupported(path) }

// ReadFileAt is not supported on this system.
func ReadFileAt(in *os.File, name string, _ int64, _ Options) ([]byte, error) {
	return nil, unsupported(filepath.Join(in.Name(), name))
}

// OpenDir is not supported on this system.
func OpenDir(path string, _ Options) (*os.File, error) { return nil, unsupported(path) }
