//go:build !linux

package audit

import "os"

// dataSync makes what was written to f durable: fsync(2) where there is no
// fdatasync(2) to call.
func dataSync(f *os.File) error { return f.Sync() }
