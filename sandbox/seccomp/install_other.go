//go:build !linux

package seccomp

import "runtime"

// Install reports that seccomp does not exist on this operating system.
func Install(opts Options) error {
	return &UnsupportedError{OS: runtime.GOOS}
}
