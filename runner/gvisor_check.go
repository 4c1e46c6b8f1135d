package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/airlock-run/airlock/sandbox"
)

// gvisorSelfTest is what the tier-2 self-test runs: calls an old runsc
// gets wrong (`ls -l` and `stat` use statx with AT_NO_AUTOMOUNT).
const gvisorSelfTest = `ls -l / >/dev/null && stat / >/dev/null && stat -c %n /usr && echo ok`

// CheckGVisor starts a real tier-2 box that lists and stats its root, so
// `airlock sandbox check` reports tier 2 only where a gVisor box works
// here, not merely where runsc is installed. It returns how long the box
// took. A box that does not end within 30 s fails (a platform that hangs
// at the first exec, as KVM does where /dev/kvm is nested).
func CheckGVisor(ctx context.Context, exe string) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "airlock-check-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	var out, errb bytes.Buffer
	start := time.Now()
	res, err := Run(ctx, exe, Request{
		Argv:   []string{"sh", "-c", gvisorSelfTest},
		Tier:   sandbox.Tier2,
		Spec:   sandbox.Spec{Workdir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{Wall: 30 * time.Second}},
		Stdout: &out, Stderr: &errb, OutputCap: 64 << 10,
	})
	took := time.Since(start)
	switch {
	case err != nil:
		return took, err
	case res.WallTimeout:
		return took, fmt.Errorf("the gVisor box did not finish within 30 s")
	case res.ExitCode != 0 || strings.TrimSpace(out.String()) != "/usr\nok":
		return took, fmt.Errorf("the gVisor box failed `ls -l /` and `stat` (exit %d): %s", res.ExitCode, checkLine(errb.String()))
	}
	return took, nil
}

// checkLine is the first line of s, trimmed.
func checkLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
