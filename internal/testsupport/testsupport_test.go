package testsupport

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// recorder is a testing.TB that notes a skip or a failure instead of
// ending the goroutine, so the gate itself can be tested.
type recorder struct {
	testing.TB
	skipped, failed, logged string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skip(args ...any)             { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any)            { r.failed = fmt.Sprint(args...) }
func (r *recorder) Log(args ...any)              { r.logged = fmt.Sprint(args...) }
func (r *recorder) Skipf(f string, args ...any)  { r.skipped = fmt.Sprintf(f, args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }

var (
	present = need("present", func() string { return "" })
	absent  = need("absent", func() string { return "needs the absent thing" })
	absent2 = need("absent2", func() string { return "needs another thing" })
)

func TestRequire(t *testing.T) {
	tests := []struct {
		name         string
		ci           string
		reqs         []Requirement
		skip, fail   bool
		wantInReason []string
	}{
		{"all present", "", []Requirement{present}, false, false, nil},
		{"none asked", "true", nil, false, false, nil},
		{"missing skips outside CI", "", []Requirement{present, absent}, true, false, []string{"needs the absent thing"}},
		{"missing fails under CI", "true", []Requirement{absent}, false, true, []string{"CI=true", "needs the absent thing"}},
		{"CI must be exactly true", "1", []Requirement{absent}, true, false, nil},
		{"every missing one is named", "", []Requirement{absent, present, absent2}, true, false, []string{"needs the absent thing", "needs another thing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			r := &recorder{TB: t}
			Require(r, tt.reqs...)
			if got := r.skipped != ""; got != tt.skip {
				t.Errorf("skipped %v (%q), want %v", got, r.skipped, tt.skip)
			}
			if got := r.failed != ""; got != tt.fail {
				t.Errorf("failed %v (%q), want %v", got, r.failed, tt.fail)
			}
			for _, w := range tt.wantInReason {
				if !strings.Contains(r.skipped+r.failed, w) {
					t.Errorf("reason %q lacks %q", r.skipped+r.failed, w)
				}
			}
		})
	}
}

func TestMissingPart(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		MissingPart(r, "no %s here", "thing")
		if r.skipped != "" || (ci == "true") != (r.failed != "") || (ci == "") != (r.logged != "") {
			t.Errorf("CI=%q: got skipped %q, failed %q, logged %q; want a failure under CI, else only a log line", ci, r.skipped, r.failed, r.logged)
		}
		if !strings.Contains(r.failed+r.logged, "no thing here") {
			t.Errorf("CI=%q: the reason is missing from %q", ci, r.failed+r.logged)
		}
	}
}

// TestChecks: each requirement's check agrees with a direct look at the
// host, so a gate cannot pass on a host that lacks the feature.
func TestChecks(t *testing.T) {
	_, bwrapErr := os.Stat("/usr/bin/bwrap")
	_, procErr := os.Stat("/proc/self/status")
	tests := []struct {
		req  Requirement
		want bool
	}{
		{Root, os.Geteuid() == 0},
		{Bwrap, bwrapErr == nil},
		{Proc, procErr == nil},
		{Program("sh"), true},
		{Program("airlock-no-such-program"), false},
	}
	for _, tt := range tests {
		t.Run(tt.req.String(), func(t *testing.T) {
			why := tt.req.check()
			if got := why == ""; got != tt.want {
				t.Errorf("host has %s: got %v (%q), want %v", tt.req, got, why, tt.want)
			}
		})
	}
	t.Logf("here: network namespaces %q, cgroups %q (\"\" is present)", NetNS.check(), CgroupV1orV2.check())
}

// TestNetNSProbe: where the probe says namespaces work, `ip netns` can
// make one for real, which is what the tests gated on NetNS do.
func TestNetNSProbe(t *testing.T) {
	Require(t, NetNS)
	name := fmt.Sprintf("alkts%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("the probe said yes, but ip netns add: %v: %s", err, out)
	}
	exec.Command("ip", "netns", "del", name).Run()
}

// TestAirlockBin builds the binary from this checkout and runs it.
func TestAirlockBin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the airlock binary")
	}
	t.Setenv("AIRLOCK_BIN", "")
	bin := AirlockBin(t)
	if again := AirlockBin(t); again != bin {
		t.Errorf("second call gave %s, want the same binary %s", again, bin)
	}
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "airlock") {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	t.Setenv("AIRLOCK_BIN", bin)
	if got := AirlockBin(t); got != bin {
		t.Errorf("with AIRLOCK_BIN set got %s, want %s", got, bin)
	}
	r := &recorder{TB: t}
	t.Setenv("AIRLOCK_BIN", t.TempDir())
	AirlockBin(r)
	if !strings.Contains(r.failed, "is not the airlock binary") {
		t.Errorf("AIRLOCK_BIN naming a directory: got failure %q, want it refused", r.failed)
	}
}
