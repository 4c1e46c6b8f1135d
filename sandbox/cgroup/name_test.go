package cgroup

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidName: the hand-written check accepts exactly what the regular
// expression it replaces accepts.
func TestValidName(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	names := []string{"", "a", "A9", "run-1.x_y", ".a", "_a", "-a", "a b", "a/b", "ä", "a\x00", "aé",
		strings.Repeat("a", 64), strings.Repeat("a", 65), "1234-abcdef012345"}
	for c := 0; c < 256; c++ {
		names = append(names, string(rune(c)), "a"+string([]byte{byte(c)}), string([]byte{byte(c)})+"a")
	}
	for _, n := range names {
		if got, want := validName(n), re.MatchString(n); got != want {
			t.Errorf("validName(%q) = %v, want %v", n, got, want)
		}
	}
}
