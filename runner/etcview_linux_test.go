package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// etcListing is what a box sees of its /etc: every path with its type and
// link target; the mode, owner, group and size of everything but the
// directories bubblewrap or airlock makes (/etc and the parents of the
// files listed, whose modes differ: bubblewrap makes them 0700 for the
// box's user, the view 0755 for every user); and the digest of every
// regular file's content. Times and link counts are left out: those of
// what airlock makes are when it was made.
const etcListing = `find /etc ! -type d -printf '%p %y %l %m %U %G %s\n' | sort
find /etc -type d -printf '%p %y %m %U %G\n' | grep -v -x -e '/etc d.*' -e '/etc/ssl d.*' -e '/etc/pki d.*' -e '/etc/pki/tls d.*' | sort
find /etc -type d -printf '%p\n' | sort
find /etc -type f -exec sha256sum {} + | sort`

// boxEtc runs the listing in a box of spec and returns its output.
func boxEtc(t *testing.T, spec sandbox.Spec) string {
	t.Helper()
	var out, errb bytes.Buffer
	res, err := Run(context.Background(), testExe(t), Request{Argv: []string{"/bin/sh", "-c", etcListing}, Spec: spec, Tier: sandbox.Tier1, Stdout: &out, Stderr: &errb})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("listing /etc: exit %d, %v: %s", res.ExitCode, err, errb.String())
	}
	return out.String()
}

// The box's /etc as one view shows exactly what binding each file showed:
// the same names, types, link targets, modes, owners and contents; nothing
// more of the host's /etc.
func TestEtcViewShowsWhatTheBindsShowed(t *testing.T) {
	if r := sandbox.Probe(); r.Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "tier 1 unavailable here: %s", r.Why)
	}
	spec := sandbox.Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/box"}}
	binds := boxEtc(t, spec) // no caches: /etc file by file

	cache := filepath.Join(t.TempDir(), "etc-views")
	spec.Caches = sandbox.NewCaches(sandbox.CacheConfig{EtcViewDir: cache})
	made := boxEtc(t, spec)  // the view made
	again := boxEtc(t, spec) // and taken again
	if views, _ := filepath.Glob(filepath.Join(cache, "*.rec")); len(views) != 1 {
		t.Fatalf("views kept: %v, want one (the runs were not given a view)", views)
	}
	if d := cmp.Diff(binds, made); d != "" {
		t.Errorf("/etc through the view differs from the binds (-binds +view):\n%s", d)
	}
	if d := cmp.Diff(binds, again); d != "" {
		t.Errorf("/etc through the kept view differs from the binds (-binds +view):\n%s", d)
	}
	// The listing is real: the host's secrets are absent from both, the
	// files a box needs present in both.
	for _, want := range []string{"/etc/passwd f", "/etc/ld.so.cache f", "/etc/hosts f"} {
		if !strings.Contains(made, want) {
			t.Errorf("the view lacks %q:\n%s", want, made)
		}
	}
	for _, secret := range []string{"/etc/shadow", "/etc/ssh", "/etc/sudoers"} {
		if _, err := os.Stat(secret); err == nil && strings.Contains(made, secret+" ") {
			t.Errorf("the view shows the host's %s", secret)
		}
	}
}
