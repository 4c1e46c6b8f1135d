package node

import (
	"strings"
	"testing"
)

func TestJobDirIsFreshEachTime(t *testing.T) {
	r := &runner{cfg: Config{StateDir: t.TempDir()}}
	dir, err := r.jobDir("j-1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(dir, "/jobs/j-1") {
		t.Errorf("dir %s", dir)
	}
	if _, err := r.jobDir("j-1"); err == nil {
		t.Error("a job id run before on this node got its old directory; want a refusal")
	}
}

func TestCapped(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
		cut    bool
	}{
		{"within", []string{"ab", "cd"}, "abcd", false},
		{"exactly", []string{"abcde"}, "abcde", false},
		{"over in one write", []string{"abcdefg"}, "abcde", true},
		{"over across writes", []string{"abc", "def", "g"}, "abcde", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capped{n: 5}
			for _, w := range tt.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want all of it taken", w, n, err)
				}
			}
			if c.String() != tt.want || c.cut != tt.cut {
				t.Errorf("got %q cut=%v, want %q cut=%v", c.String(), c.cut, tt.want, tt.cut)
			}
		})
	}
}
