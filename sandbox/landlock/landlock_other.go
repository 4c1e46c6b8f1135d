//go:build !linux

package landlock

import "errors"

// ErrUnsupported is every answer off Linux.
var ErrUnsupported = errors.New("landlock: needs Linux")

// ABI reports that there is no Landlock off Linux.
func ABI() (int, error) { return 0, nil }

// RestrictExec is not supported off Linux.
func RestrictExec(paths, hide []string) ([]string, error) { return nil, ErrUnsupported }
