package boxinit

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

type devIno struct{ dev, ino uint64 }

func statOf(t *testing.T, p string) devIno {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return devIno{uint64(st.Dev), st.Ino}
}

// dupFD returns a descriptor of its own for f, as an inherited one would be.
func dupFD(f *os.File) (int, error) { return unix.Dup(int(f.Fd())) }
