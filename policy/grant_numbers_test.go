package policy

import (
	"encoding/json"
	"testing"
	"time"
)

// TestToolGrantNumbersExact: a grant of "call transfer with exactly these
// arguments" holds one value per number. The gateway forwards a number as
// it was written, and a server that reads integers exactly (Python, Go's
// int64, JavaScript's BigInt) tells 12345678901234567 from
// 12345678901234568; a grant compared through float64 took the one for the
// other, so the person's "always" for one account paid another.
func TestToolGrantNumbersExact(t *testing.T) {
	p, err := Parse("p.yaml", []byte("tools:\n  transfer: escalate\n"))
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) map[string]any { return map[string]any{"to": json.Number(s)} }
	// A grant made from an exact number: 12345678901234568 is a float64.
	g, err := GrantFor(Call{Tool: "transfer", Args: num("12345678901234568")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.WithGrants([]Grant{g}).Compile(World{Workdir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, n string
		want    Verdict
	}{
		{"the granted number", "12345678901234568", Allow},
		{"the same value spelled otherwise", "1.2345678901234568e16", Allow},
		{"a neighbour that rounds to it", "12345678901234567", Escalate},
		{"a neighbour above", "12345678901234568.5", Escalate},
		{"more digits than a float64 holds", "12345678901234568.000000000000000001", Escalate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Tool("transfer", num(tc.n)); got.Verdict != tc.want {
				t.Errorf("%s: got %v (%s), want %v", tc.n, got.Verdict, got.Rule, tc.want)
			}
		})
	}
	// A grant cannot be made for a number a float64 cannot hold: it would
	// be stored as its neighbour.
	for _, n := range []string{"12345678901234567", "0.1000000000000000055511151231257827", "1e400", "1e-99999999999"} {
		if g, err := GrantFor(Call{Tool: "transfer", Args: num(n)}, time.Now()); err == nil {
			t.Errorf("%s: granted as %v; want a refusal", n, g.Args["to"])
		}
	}
	// Ordinary numbers keep their grants.
	for _, n := range []string{"0.1", "3", "-0", "2.5e-3", "1E+2"} {
		if _, err := GrantFor(Call{Tool: "transfer", Args: num(n)}, time.Now()); err != nil {
			t.Errorf("%s: %v; want a grant", n, err)
		}
	}
}
