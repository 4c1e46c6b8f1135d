//go:build linux

package boxinit

import (
	"errors"

	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// installSeccomp installs the box's filter on the calling thread.
func installSeccomp(ptrace bool) error {
	return errors.New("the seccomp filter is not part of this build")
}

// startNet starts the in-box forwarder and returns the environment that
// points programs at it.
func startNet(n *boxconf.Net) ([]string, error) {
	return nil, errors.New("the in-box forwarder is not part of this build; the box has no network")
}
