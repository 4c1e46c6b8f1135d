package audit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dataSync makes what was written to f durable: fdatasync(2), which writes
// the data and the metadata needed to read it back (an append's new size)
// but not the file's times, which no record depends on. On a journalled
// file system it is one commit fewer of the inode than fsync(2) for every
// record a command waits for.
func dataSync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
