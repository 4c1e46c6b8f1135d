package boxinit

import (
	"testing"

	"github.com/airlock-run/airlock/sandbox/boxconf"
)

// TestIsListener: a warm box's listeners are told apart in /proc/net/tcp
// by their socket inode, listening, on 127.0.0.1 at their own port; a
// call's socket on the same port (its own listener once the box's is
// gone, a connection, a TIME_WAIT) is not one of them.
func TestIsListener(t *testing.T) {
	n := &boxNet{listen: &boxconf.Listen{HTTPPort: 3128, SOCKSPort: 1080}, inodes: [2]uint64{5001, 5002}}
	line := func(local, remote, state, inode string) string {
		return "   0: " + local + " " + remote + " " + state + " 00000000:00000000 00:00000000 00000000     0        0 " + inode + " 1 0000000000000000 100 0 0 10 0"
	}
	lo := loopbackHex
	rows := []struct {
		name, line string
		want       bool
	}{
		{"the HTTP listener", line(lo+":0C38", "00000000:0000", "0A", "5001"), true},
		{"the SOCKS listener", line(lo+":0438", "00000000:0000", "0A", "5002"), true},
		{"a call's listener on the port", line(lo+":0C38", "00000000:0000", "0A", "6001"), false},
		{"the inode on the other's port", line(lo+":0438", "00000000:0000", "0A", "5001"), false},
		{"the inode not listening", line(lo+":0C38", "00000000:0000", "07", "5001"), false},
		{"a connection to the port", line(lo+":0C38", lo+":B4D2", "01", "7001"), false},
		{"a TIME_WAIT on the port", line(lo+":0C38", lo+":B4D2", "06", "0"), false},
		{"the listener's port on another address", line("0100000A:0C38", "00000000:0000", "0A", "5001"), false},
		{"a short line", "   0: " + lo + ":0C38 00000000:0000 0A", false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if got := n.isListener(r.line); got != r.want {
				t.Errorf("isListener(%q) = %v, want %v", r.line, got, r.want)
			}
		})
	}
	if (*boxNet)(nil).isListener(line(lo+":0C38", "00000000:0000", "0A", "5001")) {
		t.Error("a box without network has a listener")
	}
}
