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

// TestBoxBinaryWhereTheKernelsBoxesWrote: an airlock-box in a directory
// the kernel's list says its boxes may write or were let write
// (Spec.Caches) is passed over in that kernel's plans only: a plan whose
// kernel's list does not name it, made before and after in the same
// process, takes it.
func TestBoxBinaryWhereTheKernelsBoxesWrote(t *testing.T) {
	needTier1(t)
	exe, small := withBoxBin(t)
	wrote := NewCaches(CacheConfig{BoxWritable: []string{filepath.Dir(small)}})
	clean := NewCaches(CacheConfig{})
	for _, tc := range []struct {
		name   string
		caches *Caches
		want   string
	}{
		{"a kernel whose boxes never wrote there", clean, small},
		{"a kernel whose boxes were let write there", wrote, realPath(t, exe)},
		{"the first kernel again", clean, small},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := walledSpec(t)
			spec.Caches = tc.caches
			box, err := Plan(spec, Tier1, exe)
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close()
			if box.initBin != tc.want {
				t.Fatalf("the box binds %s, want %s (notes %q)", box.initBin, tc.want, box.Notes)
			}
			if tc.want != small && !strings.Contains(lastNote(box.Notes, "in-box code"), "was let write") {
				t.Errorf("the note %q does not say a box of the kernel was let write there", lastNote(box.Notes, "in-box code"))
			}
		})
	}
}
