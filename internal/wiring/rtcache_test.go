package wiring

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLoadPolicyFollowsTheFileAcrossCalls: one process loads the working
// directory's policy file again and again (a per-user server's calls);
// between the loads the file is rewritten with other bytes of the same
// size and its old modification time put back, renamed over by such a
// file, and its bytes copied under another name. Every load gives what a
// fresh process's Parse of the file's bytes gives then.
func TestLoadPolicyFollowsTheFileAcrossCalls(t *testing.T) {
	_, work, getenv := privateWorld(t)
	file := filepath.Join(work, "airlock.yaml")
	writeFile(t, file, "shell: {allow: [aa]}\n")
	p, _, err := LoadPolicy(work, work, "", getenv)
	if err != nil || !slices.Equal(p.Shell.Allow, []string{"aa"}) {
		t.Fatalf("first load: %v, %v", p, err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func() error
		want   string
	}{
		{"rewritten in place, same size and time", func() error {
			if err := os.WriteFile(file, []byte("shell: {allow: [bb]}\n"), 0o644); err != nil {
				return err
			}
			return os.Chtimes(file, st.ModTime(), st.ModTime())
		}, "bb"},
		{"renamed over, same size and time", func() error {
			tmp := file + ".new"
			if err := os.WriteFile(tmp, []byte("shell: {allow: [cc]}\n"), 0o644); err != nil {
				return err
			}
			if err := os.Chtimes(tmp, st.ModTime(), st.ModTime()); err != nil {
				return err
			}
			return os.Rename(tmp, file)
		}, "cc"},
	}
	for _, s := range steps {
		if err := s.change(); err != nil {
			t.Fatal(err)
		}
		p, _, err := LoadPolicy(work, work, "", getenv)
		if err != nil || !slices.Equal(p.Shell.Allow, []string{s.want}) {
			t.Errorf("%s: got %v, %v; want shell.allow [%s]", s.name, p, err, s.want)
		}
	}
	// The same bytes under another name, named explicitly: its own parse,
	// its own file in its Source.
	other := filepath.Join(work, "other.yaml")
	data, _ := os.ReadFile(file)
	writeFile(t, other, string(data))
	q, src, err := LoadPolicy(work, work, other, getenv)
	if err != nil || src != other || !slices.Equal(q.Shell.Allow, []string{"cc"}) {
		t.Errorf("another name: got %v, %q, %v", q, src, err)
	}
}
