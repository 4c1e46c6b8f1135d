package mediator

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// At tier 0 there is no box to keep a bound secret's real value out of:
// the command runs as airlock's caller and reads airlock's own environment.
// Such a run is refused before anything starts, naming the fix.
func TestTier0RefusesPhantoms(t *testing.T) {
	tests := []struct {
		name, policy string
		// narrow, when set, narrows the call (Call.Narrow).
		narrow  string
		refused bool
	}{
		{"no secrets, no models", "shell: {allow: [ls]}\n", "", false},
		{"a bound secret", "shell: {allow: [ls]}\nsecrets: {TOKEN: {hosts: [api.example], header: \"Authorization: Bearer {}\"}}\n", "", true},
		{"the model proxy", "shell: {allow: [ls]}\nmodels: {allow: [gpt-x]}\n", "", true},
		// A narrowing that drops the binding leaves the real value in
		// airlock's environment all the same.
		{"a bound secret narrowed away", "shell: {allow: [ls]}\nsecrets: {TOKEN: {hosts: [api.example], header: \"Authorization: Bearer {}\"}}\n",
			"shell: {allow: [ls]}\nsecrets: {OTHER: {hosts: [api.example], header: \"Authorization: Bearer {}\"}}\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKernel(t, tt.policy, Options{Tier: sandbox.Tier0, Environ: []string{"TOKEN=real-value", "PATH=/usr/bin:/bin"}})
			call := Call{Kind: KindExec, Argv: []string{"ls"}}
			if tt.narrow != "" {
				n, err := policy.Parse("narrow.yaml", []byte(tt.narrow))
				if err != nil {
					t.Fatal(err)
				}
				call.Narrow = n
			}
			_, err := k.Exec(context.Background(), call, ExecOptions{})
			if !tt.refused {
				if err != nil && strings.Contains(err.Error(), "tier 0") {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || errs.ClassOf(err) != errs.Unavailable || !strings.Contains(err.Error(), "run it at tier 1") {
				t.Fatalf("got %v, want the tier-0 refusal naming the fix", err)
			}
		})
	}
}
