package egress

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// SocketName is the file name of a box's proxy socket inside its directory.
const SocketName = "egress.sock"

// Listen makes a directory only this user can enter under parent ("" for
// the system's temporary directory) and listens on a Unix socket in it with
// mode 0600. The directory's mode, not the socket's, is what keeps other
// users out (some systems ignore a socket's own permissions); the token keeps
// out this user's other processes. Closing ln removes the socket; remove
// dir when done with it.
func Listen(parent string) (ln *net.UnixListener, path, dir string, err error) {
	dir, err = os.MkdirTemp(parent, "airlock-egress-")
	if err != nil {
		return nil, "", "", fmt.Errorf("egress: make socket directory: %w", err)
	}
	fail := func(err error) (*net.UnixListener, string, string, error) {
		os.RemoveAll(dir)
		return nil, "", "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fail(fmt.Errorf("egress: make socket directory private: %w", err))
	}
	path = filepath.Join(dir, SocketName)
	if len(path) >= 108 {
		return fail(errors.New("egress: socket path " + path + " is too long for a Unix socket (choose a shorter parent directory)"))
	}
	ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fail(fmt.Errorf("egress: listen on %s: %w", path, err))
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fail(fmt.Errorf("egress: restrict %s: %w", path, err))
	}
	return ln, path, dir, nil
}
