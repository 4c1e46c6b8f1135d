package sandbox

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCachesWeighEveryKernelsList: two kernels' Caches name one view
// directory (a node's jobs) with different box-writable lists: the
// second's boxes were let write the directory the views lie in, the
// first's not. The directory is the host's, shared by both: once a kernel
// of the process may write it, no plan of any kernel takes a view there,
// whichever Caches was made first; before that, the first takes it.
func TestCachesWeighEveryKernelsList(t *testing.T) {
	w := newEtcWorld(t)
	clean := NewCaches(CacheConfig{EtcViewDir: w.cache})
	var written *Caches
	for _, tc := range []struct {
		name     string
		caches   func() *Caches
		wantView bool
	}{
		{"no kernel's box was let write the views' directory yet", func() *Caches { return clean }, true},
		{"a box of this kernel was let write it", func() *Caches {
			written = NewCaches(CacheConfig{EtcViewDir: w.cache, BoxWritable: []string{filepath.Dir(w.cache)}})
			return written
		}, false},
		{"the first kernel, after another's box was let write it", func() *Caches { return clean }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.caches = tc.caches()
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
		t.Errorf("the second Caches' list changed: %v", got)
	}
	if got := clean.Config().BoxWritable; len(got) != 0 {
		t.Errorf("the first Caches' own list changed: %v", got)
	}
}

// TestBoxBinaryWhereAKernelsBoxesWrote: the airlock-box is pinned once
// for the process, so one in a directory any kernel's list says its boxes
// may write or were let write (Spec.Caches) is passed over in every
// kernel's plans from then on: a plan of a kernel whose own list does not
// name it takes it before, and not after.
func TestBoxBinaryWhereAKernelsBoxesWrote(t *testing.T) {
	needTier1(t)
	exe, small := withBoxBin(t)
	clean := NewCaches(CacheConfig{})
	var wrote *Caches
	for _, tc := range []struct {
		name   string
		caches func() *Caches
		want   string
	}{
		{"no kernel's boxes wrote there yet", func() *Caches { return clean }, small},
		{"a kernel whose boxes were let write there", func() *Caches {
			wrote = NewCaches(CacheConfig{BoxWritable: []string{filepath.Dir(small)}})
			return wrote
		}, realPath(t, exe)},
		{"the first kernel, after another's boxes were let write there", func() *Caches { return clean }, realPath(t, exe)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := walledSpec(t)
			spec.Caches = tc.caches()
			box, err := Plan(spec, Tier1, exe)
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close()
			if box.initBin != tc.want {
				t.Fatalf("the box binds %s, want %s (notes %q)", box.initBin, tc.want, box.Notes)
			}
			if tc.want != small && !strings.Contains(lastNote(box.Notes, "in-box code"), "was let write") {
				t.Errorf("the note %q does not say a box was let write there", lastNote(box.Notes, "in-box code"))
			}
		})
	}
}

// TestPlanNotesWhatItsBoxMayWrite: a box's writable directory that its
// kernel's list does not name (it did not exist when the list was made)
// is passed over for the host's programs from the plan on: the next plan
// of a kernel whose list names nothing does not take a bubblewrap there.
func TestPlanNotesWhatItsBoxMayWrite(t *testing.T) {
	needTier1(t)
	exe, _ := withBoxBin(t)
	dir := t.TempDir()
	spec := walledSpec(t)
	spec.Caches = NewCaches(CacheConfig{})
	spec.Writable, spec.Write = true, []string{dir}
	if slices.Contains(everWritable.list(), dir) {
		t.Fatalf("%s listed before any plan", dir)
	}
	box, err := Plan(spec, Tier1, exe)
	if err != nil {
		t.Fatal(err)
	}
	box.Close()
	if !slices.Contains(NewCaches(CacheConfig{}).boxWritable(), dir) {
		t.Fatalf("the box could write %s, and a later plan's list %v does not name it", dir, NewCaches(CacheConfig{}).boxWritable())
	}
}
