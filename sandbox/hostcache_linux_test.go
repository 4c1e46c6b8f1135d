package sandbox

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestCachesWeighTheirOwnList: two kernels' Caches name one view
// directory (a node's jobs) with different box-writable lists: the first
// was let write the directory the views lie in, the second not. Each plan
// weighs the directory against its own kernel's list, whichever Caches
// was made last: the first is refused the view, the second takes it.
func TestCachesWeighTheirOwnList(t *testing.T) {
	w := newEtcWorld(t)
	written := NewCaches(CacheConfig{EtcViewDir: w.cache, BoxWritable: []string{filepath.Dir(w.cache)}})
	clean := NewCaches(CacheConfig{EtcViewDir: w.cache})
	for _, tc := range []struct {
		name     string
		caches   *Caches
		wantView bool
	}{
		{"a box of this kernel was let write the views' directory", written, false},
		{"no box of this kernel was", clean, true},
		{"the first again, after the second", written, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.caches = tc.caches
			view, _, err := w.plan(t) // the plan's box is closed at cleanup
			var nv *errNoView
			switch {
			case tc.wantView && err != nil:
				t.Fatalf("plan: %v, want the view", err)
			case !tc.wantView && !errors.As(err, &nv):
				t.Fatalf("plan: view %q, err %v; want the view refused", view, err)
			case !tc.wantView && !strings.Contains(err.Error(), filepath.Dir(w.cache)):
				t.Errorf("refusal %q does not name %s", err, filepath.Dir(w.cache))
			}
		})
	}
	if got := written.Config().BoxWritable; len(got) != 1 {
		t.Errorf("the first Caches' list changed: %v", got)
	}
	if got := clean.Config().BoxWritable; len(got) != 0 {
		t.Errorf("the second Caches' list changed: %v", got)
	}
}
