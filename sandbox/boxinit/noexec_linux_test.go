//go:build linux

package boxinit

import (
	"slices"
	"testing"
)

// TestWritableMounts: the seal takes each writable mount at or beneath a
// point, once, and leaves read-only binds (a listed program may lie in one)
// and mounts elsewhere alone.
func TestWritableMounts(t *testing.T) {
	const info = `79 66 0:41 / /tmp rw,nosuid,nodev,relatime - tmpfs tmpfs rw
80 79 254:0 /w /tmp/wd ro,nosuid,nodev,relatime - ext4 /dev/vda rw
81 79 254:0 /g /tmp/grant rw,nosuid,nodev,relatime - ext4 /dev/vda rw
82 81 254:0 /g/.git /tmp/grant/.git ro,nosuid,nodev,relatime - ext4 /dev/vda rw
83 81 254:0 /g/sub /tmp/grant/my\040dir rw,relatime - ext4 /dev/vda rw
84 66 0:42 / /tmpx rw,relatime - tmpfs tmpfs rw
85 66 0:43 / /dev rw,nosuid - tmpfs tmpfs rw
86 85 0:6 /null /dev/null rw,nosuid - devtmpfs devtmpfs rw
87 79 254:0 /g /tmp/grant rw,nosuid,nodev,relatime - ext4 /dev/vda rw
`
	tests := []struct {
		name   string
		points []string
		want   []string
	}{
		{"tmp tree", []string{"/tmp"}, []string{"/tmp", "/tmp/grant", "/tmp/grant/my dir"}},
		{"grant only", []string{"/tmp/grant"}, []string{"/tmp/grant", "/tmp/grant/my dir"}},
		{"dev", []string{"/dev"}, []string{"/dev", "/dev/null"}},
		{"none", []string{"/home"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := writableMounts(info, tc.points); !slices.Equal(got, tc.want) {
				t.Errorf("writableMounts(%v) = %q, want %q", tc.points, got, tc.want)
			}
		})
	}
}
