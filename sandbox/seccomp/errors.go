package seccomp

import (
	"fmt"

	"github.com/airlock-run/airlock/errs"
)

// UnsupportedError is Install's answer on an operating system without
// seccomp. Its class is errs.Unavailable.
type UnsupportedError struct{ OS string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("seccomp: not supported on %s (tier 1 needs Linux)", e.OS)
}

// ErrClass makes the error's class errs.Unavailable.
func (e *UnsupportedError) ErrClass() errs.Class { return errs.Unavailable }

// InstallError is a failed step of Install: the operation and the cause.
// Its class is errs.Unavailable, since the host refused what the box needs.
type InstallError struct {
	Op  string
	Err error
}

func (e *InstallError) Error() string        { return "seccomp: " + e.Op + ": " + e.Err.Error() }
func (e *InstallError) Unwrap() error        { return e.Err }
func (e *InstallError) ErrClass() errs.Class { return errs.Unavailable }
