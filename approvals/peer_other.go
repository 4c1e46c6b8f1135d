//go:build !linux

package approvals

import (
	"io"
	"net"

	"github.com/airlock-run/airlock/errs"
)

// peerCred is not available here, so the socket admits nobody: an answer
// whose sender cannot be known is never taken.
func peerCred(c *net.UnixConn) (peer, error) {
	return peer{pidfd: -1}, errs.Unavailablef("approvals: telling who connected is not supported on this platform")
}

func (p peer) close() {}

// sameNamespaces cannot be told here.
func (p peer) sameNamespaces() error {
	return errs.Unavailablef("approvals: namespaces are not supported on this platform")
}

// flushInput does nothing where the terminal cannot be flushed.
func flushInput(t io.ReadWriter) {}
