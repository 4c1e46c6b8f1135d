//go:build !linux

package landlock

import "errors"

// ErrUnsupported is every answer off Linux.
var ErrUnsupported = errors.New("landlock: needs Linux")

// ABI reports that there is no Landlock off Linux.
func ABI() (int, error) { return 0, nil }

// RestrictExec is not supported off Linux.
func RestrictExec(paths, hide []string) ([]string, error) { return nil, ErrUnsupported }

// Rules are what one ruleset allows (see the Linux build).
type Rules struct {
	ExecWall  bool
	Exec      []string
	Hide      []string
	WriteWall bool
	Write     []string
	Scope     bool
}

// Restrict is not supported off Linux.
func Restrict(r Rules) ([]string, error) { return nil, ErrUnsupported }
