package sandbox

import "testing"

// TestBindInBoxIsThePlansOwn: Spec.BindInBox binds the in-box code at
// InitPath, read-only, in a box bubblewrap starts directly, and only in
// the box whose spec asks: plans of one process made one after the other
// each get what their own spec says (the package-wide switch it replaces
// gave every box of the process the last setting).
func TestBindInBoxIsThePlansOwn(t *testing.T) {
	needTier1(t)
	exe := airlockIn(t, t.TempDir())
	probe := []string{"/bin/sh", "-c", "if [ -e " + InitPath + " ]; then echo there; else echo absent; fi; ( : >> " + InitPath + " ) 2>/dev/null && echo writable; echo done"}
	direct := func(bind bool) Spec {
		return Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, BindInBox: bind}
	}
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"asked", direct(true), "there\ndone\n"},
		{"not asked, after a plan that asked", direct(false), "absent\ndone\n"},
		{"asked again", direct(true), "there\ndone\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			box, err := Plan(tc.spec, Tier1, exe)
			if err != nil {
				t.Fatal(err)
			}
			if o := runBox(t, box, probe); o.code != 0 || o.out != tc.want {
				t.Fatalf("got exit %d and %q, want 0 and %q", o.code, o.out, tc.want)
			}
		})
	}
}
