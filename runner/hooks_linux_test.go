package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/airlock-run/airlock/sandbox"
)

// TestHooks: BeforeStart runs once before anything of the command's
// starts, and its error ends the run with nothing run; Ended is given the
// result Run returns, once, and only for a command that started.
func TestHooks(t *testing.T) {
	for _, tc := range tiers() {
		if tc.net {
			continue
		}
		t.Run(tc.name(), func(t *testing.T) {
			if tc.skip != "" {
				tc.gate(t)
			}
			refused := errors.New("the decision is not recorded")
			for _, name := range []string{"allowed", "refused"} {
				t.Run(name, func(t *testing.T) {
					var out bytes.Buffer
					var before, ended int
					var got Result
					var gotErr error
					req := Request{Argv: []string{"/bin/sh", "-c", "echo ran"}, Spec: baseSpec(t), Tier: tc.tier, Stdout: &out,
						BeforeStart: func() error {
							before++
							if out.Len() != 0 {
								t.Errorf("BeforeStart ran after the command wrote %q", out.String())
							}
							if name == "refused" {
								return refused
							}
							return nil
						},
						Ended: func(r Result, err error) { ended++; got, gotErr = r, err }}
					res, err := Run(context.Background(), testExe(t), req)
					if before != 1 {
						t.Errorf("BeforeStart ran %d times, want once", before)
					}
					if name == "refused" {
						if !errors.Is(err, refused) || out.Len() != 0 || ended != 0 {
							t.Fatalf("BeforeStart refusing: err %v, output %q, Ended %d times; want its error, nothing run, no Ended", err, out.String(), ended)
						}
						return
					}
					if err != nil || out.String() != "ran\n" {
						t.Fatalf("got %v, output %q; want ran", err, out.String())
					}
					if ended != 1 || gotErr != nil || !reflect.DeepEqual(got, res) {
						t.Errorf("Ended %d times with %+v, %v; want once, with what Run returned (%+v)", ended, got, gotErr, res)
					}
				})
			}
		})
	}
}

// TestPoolHooks: a pool's call gives Ended the result Pool.Run returns,
// once, whether it made the box or found it warm, and before the box is
// handed back to be cleared (no other box of the kind is idle while
// Ended runs); a refusing BeforeStart ends the call with no Ended.
func TestPoolHooks(t *testing.T) {
	requireTier1(t)
	p := warmPool(t)
	spec := baseSpec(t)
	for i, name := range []string{"new box", "warm box", "refused"} {
		var out bytes.Buffer
		var ended int
		var got Result
		var gotErr, busy error
		refused := errors.New("the decision is not recorded")
		req := Request{Argv: []string{"/bin/sh", "-c", "echo ran"}, Spec: spec, Tier: sandbox.Tier1, Stdout: &out,
			BeforeStart: func() error {
				if name == "refused" {
					return refused
				}
				return nil
			},
			Ended: func(r Result, err error) {
				ended++
				got, gotErr = r, err
				p.mu.Lock()
				for _, list := range p.free {
					if len(list) > 0 {
						busy = errors.New("a box was idle again before Ended returned")
					}
				}
				p.mu.Unlock()
			}}
		res, err := p.Run(context.Background(), req)
		if name == "refused" {
			if !errors.Is(err, refused) || out.Len() != 0 || ended != 0 {
				t.Fatalf("%s: err %v, output %q, Ended %d times; want its error, nothing run, no Ended", name, err, out.String(), ended)
			}
			continue
		}
		if err != nil || out.String() != "ran\n" {
			t.Fatalf("%s: got %v, output %q; want ran", name, err, out.String())
		}
		if ended != 1 || gotErr != nil || !reflect.DeepEqual(got, res) {
			t.Errorf("%s: Ended %d times with %+v, %v; want once, with what Pool.Run returned (%+v)", name, ended, got, gotErr, res)
		}
		if busy != nil {
			t.Errorf("%s: %v", name, busy)
		}
		if want := fmt.Sprintf("warm box: call %d of this box", i+1); !slices.Contains(res.Description.Notes, want) {
			t.Errorf("%s: notes %q, want %q", name, res.Description.Notes, want)
		}
		p.settledAll()
	}
}
