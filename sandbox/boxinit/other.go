//go:build !linux

package boxinit

import (
	"fmt"
	"os"
)

// Main reports that the box exists only on Linux.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "airlock: box init: the sandbox needs Linux")
	return 125
}
