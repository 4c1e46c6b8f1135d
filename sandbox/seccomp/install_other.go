//go:build !linux

package seccomp

import "runtime"

// Install reports that seccomp does not exist on this operating system.
func Install(opts Options) error {
	return &UnsupportedError{OS: runtime.GOOS}
}

// Supported reports false: seccomp exists only on Linux.
func Supported() (bool, string) {
	return false, "seccomp exists only on Linux; this is " + runtime.GOOS
}
