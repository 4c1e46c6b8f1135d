package sandbox

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBwrapOrder: the order keeps every op after each op the depth order
// put before it at or above its destination, leaves out none and adds
// none, and puts /proc, its cover and /dev first.
func TestBwrapOrder(t *testing.T) {
	kinds := [][]string{{"--tmpfs"}, {"--ro-bind-fd", "3"}, {"--symlink", "x"}, {"--dir"}, {"--remount-ro"}}
	dests := []string{"/tmp", "/tmp/w", "/tmp/w/.git", "/run", "/run/airlock/airlock", "/home/a", "/home/a/.cache",
		"/usr", "/etc", "/etc/ssl/certs", "/var/tmp", "/bin", "/tmpx"}
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 300; round++ {
		ops := []op{{dest: "/proc", args: []string{"--proc", "/proc"}}, {dest: "/proc", order: 5, args: []string{"--tmpfs", "/proc/sys"}},
			{dest: "/dev", args: []string{"--dev", "/dev"}}}
		for n := r.IntN(12); n > 0; n-- {
			d := dests[r.IntN(len(dests))]
			k := kinds[r.IntN(len(kinds))]
			ops = append(ops, op{dest: d, order: r.IntN(3), args: append(slices.Clone(k), d)})
		}
		sortOps(ops)
		got := bwrapOrder(slices.Clone(ops))
		if len(got) != len(ops) {
			t.Fatalf("%d ops became %d", len(ops), len(got))
		}
		name := func(o op) string { return fmt.Sprint(o.order, o.args) }
		pos := map[string][]int{}
		for i, o := range got {
			pos[name(o)] = append(pos[name(o)], i)
		}
		// Ops may repeat; the k-th copy of one is matched with the k-th.
		seen := map[string]int{}
		at := make([]int, len(ops))
		for i, o := range ops {
			ps := pos[name(o)]
			if seen[name(o)] >= len(ps) {
				t.Fatalf("op %v is missing from %v", o.args, got)
			}
			at[i] = ps[seen[name(o)]]
			seen[name(o)]++
		}
		for j := range ops {
			for i := 0; i < j; i++ {
				if within(ops[j].dest, ops[i].dest) && at[i] > at[j] {
					t.Fatalf("%v comes before %v, which it lies in or follows on its path:\n%v", ops[j].args, ops[i].args, got)
				}
			}
		}
		if got[0].args[0] != "--proc" || got[1].args[1] != "/proc/sys" || got[2].args[0] != "--dev" {
			t.Fatalf("/proc, its cover and /dev are not first: %v", got[:3])
		}
	}
}

// TestBwrapOrderTmpfsLast: a tmpfs with nothing mounted in it goes after
// the binds, one with a bind in it before that bind.
func TestBwrapOrderTmpfsLast(t *testing.T) {
	ops := []op{
		{dest: "/tmp", args: []string{"--tmpfs", "/tmp"}},
		{dest: "/run", args: []string{"--tmpfs", "/run"}},
		{dest: "/usr", order: 2, args: []string{"--ro-bind-fd", "3", "/usr"}},
		{dest: "/tmp/w", order: 2, args: []string{"--ro-bind-fd", "4", "/tmp/w"}},
	}
	sortOps(ops)
	var got []string
	for _, o := range bwrapOrder(ops) {
		got = append(got, o.args[len(o.args)-1])
	}
	if want := []string{"/usr", "/tmp", "/tmp/w", "/run"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
