//go:build !linux

package testsupport

// probeNetNS reports that network namespaces exist only on Linux.
func probeNetNS() string { return "network namespaces need Linux" }
