package warmhand

import (
	"os"
	"path"
	"strconv"
)

// DefaultSocketDir is the directory of this user's airlock sockets, as
// approvals.DefaultSocketDir names it (the test holds them equal):
// $XDG_RUNTIME_DIR/airlock, else airlock-<uid> in the temporary directory.
func DefaultSocketDir(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); isAbs(d) {
		return path.Join(d, "airlock")
	}
	return path.Join(os.TempDir(), "airlock-"+strconv.Itoa(os.Geteuid()))
}

// SocketPath is the server's socket in dir.
func SocketPath(dir string) string { return path.Join(dir, SocketName) }

// isAbs is filepath.IsAbs where this package runs (Linux): path/filepath
// imports strings, and so unicode (see the package's comment).
func isAbs(p string) bool { return len(p) > 0 && p[0] == '/' }
