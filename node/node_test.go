package node

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/jobs"
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

// TestCallWithoutLease: a call of a job whose kernel this node does not
// hold (never opened, closed, or the node restarted) is refused, and a
// close of it does nothing.
func TestCallWithoutLease(t *testing.T) {
	r := &runner{cfg: Config{ID: "n1", StateDir: t.TempDir()}}
	_, err := r.Call(context.Background(), jobs.CallRequest{Job: jobs.Job{ID: "j-1"}, Node: "n1", Call: jobs.Call{ID: "c1", Kind: jobs.CallList}})
	if err == nil || !strings.Contains(err.Error(), "job j-1 holds no kernel here") {
		t.Fatalf("got %v, want a refusal naming the job", err)
	}
	if err := r.Close(context.Background(), "j-1"); err != nil {
		t.Fatalf("close of a job not open: %v", err)
	}
}
