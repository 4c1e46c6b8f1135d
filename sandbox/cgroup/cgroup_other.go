//go:build !linux

package cgroup

import (
	"runtime"
	"syscall"

	"github.com/airlock-run/airlock/errs"
)

func unsupported() error {
	return errs.Unavailablef("cgroups: control groups exist only on Linux; this is %s", runtime.GOOS)
}

// Detect reports that there are no control groups on this system.
func Detect() Info { return Info{Reason: unsupported().Error()} }

// DetectVersion reports that there are no control groups on this system.
func DetectVersion(int) Info { return Detect() }

// Group does not exist outside Linux; every method fails.
type Group struct{}

// New fails: control groups exist only on Linux.
func New(string, Limits) (*Group, error) { return nil, unsupported() }

// New fails: control groups exist only on Linux.
func (Info) New(string, Limits) (*Group, error) { return nil, unsupported() }

func (*Group) Version() int                                   { return 0 }
func (*Group) Limits() Limits                                 { return Limits{} }
func (*Group) Controllers() []string                          { return nil }
func (*Group) Dirs() []string                                 { return nil }
func (*Group) Dir(string) string                              { return "" }
func (*Group) Start(*syscall.SysProcAttr, func() error) error { return unsupported() }
func (*Group) Place()                                         {}
func (*Group) AddPID(int) error                               { return unsupported() }
func (*Group) Procs() ([]int, error)                          { return nil, unsupported() }
func (*Group) Kill() error                                    { return unsupported() }
func (*Group) Stats() (Stats, error)                          { return Stats{}, unsupported() }
func (*Group) OOM() bool                                      { return false }
func (*Group) Close() error                                   { return nil }
