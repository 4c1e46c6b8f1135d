//go:build !linux

package warmhand

import "context"

// Start does nothing off Linux, where no run is handed over.
func Start() (tried bool) { return false }

// HandOver runs everything cold off Linux.
func HandOver(ctx context.Context, dir string, req Request, fds []int) Result {
	return Result{Outcome: Cold}
}
