package runner

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

// boxBinaryAnswer is what airlock-box says when run with no mode, and the
// airlock binary does not.
const boxBinaryAnswer = "airlock-box: this is the code airlock runs inside its boxes"

// TestBoxBinaryAtEachTier: an airlock binary with airlock-box beside it
// runs airlock-box inside its boxes at every tier and shape (bubblewrap
// starting the command, airlock's init as PID 1 with the forwarder, an
// exec wall's exec step, gVisor, a warm box): the file at InitPath answers
// as airlock-box, and the command ran through it.
func TestBoxBinaryAtEachTier(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "airlock")
	testsupport.CopyBin(t, testsupport.AirlockBin(t), exe, 0o755)
	testsupport.CopyBin(t, testsupport.BoxBin(t), filepath.Join(dir, sandbox.BoxBinary), 0o755)
	probe := "/run/airlock/airlock; echo exit=$?"
	for _, tc := range tiers() {
		if tc.tier == sandbox.Tier0 {
			continue
		}
		for _, walled := range []bool{false, true} {
			name := tc.name()
			if walled {
				name += "+exec-wall"
			}
			t.Run(name, func(t *testing.T) {
				if tc.skip != "" {
					tc.gate(t)
				}
				spec := withNet(t, tc, baseSpec(t))
				if walled {
					if tc.tier == sandbox.Tier2 {
						t.Skip("the exec wall's shape is checked at tier 1")
					}
					// git listed: the wall lets the box run the in-box
					// binary as its proxy command.
					spec.Exec = &sandbox.ExecSpec{Programs: []string{"sh", "git"}}
				}
				var out bytes.Buffer
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				res, err := Run(ctx, exe, Request{Argv: []string{"/bin/sh", "-c", probe}, Spec: spec, Tier: tc.tier, Stdout: &out, Stderr: &out})
				if err != nil {
					t.Fatal(err)
				}
				if walled && !tc.net {
					// No proxy command to run: the wall refuses the
					// in-box binary to the box altogether, while the
					// exec step that put the wall on was that binary.
					if res.ExitCode != 0 || !strings.Contains(out.String(), "exit=126") {
						t.Fatalf("got exit %d, %q; want the wall to refuse %s (126)", res.ExitCode, out.String(), sandbox.InitPath)
					}
				} else if res.ExitCode != 0 || !strings.Contains(out.String(), boxBinaryAnswer) || !strings.Contains(out.String(), "exit=2") {
					t.Fatalf("got exit %d, %q; want %s at %s (it answers %q, exit 2)", res.ExitCode, out.String(), sandbox.BoxBinary, sandbox.InitPath, boxBinaryAnswer)
				}
				if !strings.Contains(strings.Join(res.Description.Notes, "\n"), "in-box code: "+sandbox.BoxBinary) {
					t.Errorf("the run's notes do not name %s: %q", sandbox.BoxBinary, res.Description.Notes)
				}
			})
		}
		t.Run(tc.name()+"+warm", func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			p := NewPool(exe, time.Minute)
			defer p.Close()
			for call := 1; call <= 2; call++ {
				var out bytes.Buffer
				res, err := p.Run(context.Background(), Request{Argv: []string{"/bin/sh", "-c", probe}, Spec: withNet(t, tc, baseSpec(t)), Tier: tc.tier, Stdout: &out, Stderr: &out})
				if err != nil {
					t.Fatal(err)
				}
				if res.ExitCode != 0 || !strings.Contains(out.String(), boxBinaryAnswer) {
					t.Fatalf("call %d: got exit %d, %q; want %s at %s", call, res.ExitCode, out.String(), sandbox.BoxBinary, sandbox.InitPath)
				}
			}
		})
	}
}
