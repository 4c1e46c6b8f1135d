//go:build !linux

package node

import "github.com/airlock-run/airlock/errs"

// killBox has no process table to read off Linux: a node there runs no
// boxes of tier 1, and says so when a run was lost.
func killBox(dir string, pid int) (int, error) {
	return 0, errs.Unavailablef("reaping a lost run needs Linux's /proc")
}

func processAlive(p int) bool { return false }

func sameProgram(p int) bool { return false }
