//go:build linux

package boxinit

import (
	"context"

	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/sandbox/boxconf"
	"github.com/airlock-run/airlock/sandbox/seccomp"
)

// installSeccomp sets no_new_privs and installs the box's filter on every
// thread of this init (TSYNC); the target inherits it across fork and exec.
// The filter is the one the host compiled (boxconf.Config.Filter), loaded
// as it is: this build's own would be another build's filter whenever
// the host is another build.
func installSeccomp(code []byte) error {
	return seccomp.InstallCode(code)
}

// startNet starts the in-box forwarder to the egress proxy and returns the
// environment that points programs at it. It runs until the init exits.
func startNet(n *boxconf.Net) ([]string, error) {
	return forward.Start(context.Background(), forward.Config{
		Socket: n.Socket, Token: n.Token, HTTPPort: n.HTTPPort, SOCKSPort: n.SOCKSPort,
		Exe: n.Exe, ConnectExe: n.ConnectExe, Copy: n.Copy,
	})
}
