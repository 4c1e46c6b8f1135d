package files

import (
	"errors"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/google/go-cmp/cmp"
)

// TestAccess checks every rule of who may read a file, and that every
// refusal is word for word the answer for a file never stored.
func TestAccess(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.s
	const tenant = "acme"
	sc := func(tree string) Scope { return Scope{Tenant: tenant, Tree: tree} }

	// A job tree: root job "run-1" started "run-1.agent" (a delegated agent).
	if tree, err := s.StartJob(ctx, tenant, "run-1", ""); err != nil || tree != "run-1" {
		t.Fatalf("StartJob(run-1) = %q, %v", tree, err)
	}
	childTree, err := s.StartJob(ctx, tenant, "run-1.agent", "run-1")
	if err != nil || childTree != "run-1" {
		t.Fatalf("StartJob(child) = %q, %v; want tree run-1", childTree, err)
	}
	byChild := mustPut(t, s, Scope{Tenant: tenant, Tree: childTree, Job: "run-1.agent"}, []byte("stored by the delegated agent"))
	byRoot := mustPut(t, s, sc("run-1"), []byte("stored by the root job"))

	// A conversation: turns t1 -> t2 -> t3, and a fork f3 after t2, and a
	// second fork g2 after t1.
	for _, turn := range []struct{ conv, tree, after string }{
		{"c", "t1", ""}, {"c", "t2", "t1"}, {"c", "t3", "t2"}, {"c-fork", "f3", "t2"}, {"c-fork2", "g2", "t1"},
	} {
		if err := s.AddTurn(ctx, tenant, turn.conv, turn.tree, turn.after); err != nil {
			t.Fatalf("AddTurn(%v): %v", turn, err)
		}
	}
	turnFile := map[string]Ref{}
	for _, tr := range []string{"t1", "t2", "t3", "f3", "g2"} {
		turnFile[tr] = mustPut(t, s, sc(tr), []byte("file of turn "+tr))
	}
	other := mustPut(t, s, Scope{Tenant: "globex", Tree: "run-1"}, []byte("another tenant's file, same tree name"))
	if err := s.AddTurn(ctx, tenant, "c", "t9", "nope"); errs.ClassOf(err) != errs.NotFound {
		t.Errorf("AddTurn after an unknown turn: got %v, want not found", err)
	}

	for _, tc := range []struct {
		name   string
		reader Scope
		ref    Ref
		ok     bool
	}{
		{"the tree reads what its child job stored", sc("run-1"), byChild, true},
		{"a child job reads what its root stored", Scope{Tenant: tenant, Tree: childTree, Job: "run-1.agent"}, byRoot, true},
		{"another tree of the tenant", sc("run-2"), byRoot, false},
		{"another tenant, same tree name", Scope{Tenant: "globex", Tree: "run-1"}, byRoot, false},
		{"the tenant cannot read across to another tenant", sc("run-1"), other, false},
		{"a later turn reads the first turn", sc("t3"), turnFile["t1"], true},
		{"a later turn reads the turn before", sc("t3"), turnFile["t2"], true},
		{"a turn reads its own", sc("t2"), turnFile["t2"], true},
		{"an earlier turn never reads a later one", sc("t2"), turnFile["t3"], false},
		{"a fork reads up to the turn it forked from", sc("f3"), turnFile["t2"], true},
		{"a fork reads the turns before that", sc("f3"), turnFile["t1"], true},
		{"a fork never reads the later turn of the original", sc("f3"), turnFile["t3"], false},
		{"the original never reads the fork", sc("t3"), turnFile["f3"], false},
		{"another branch never reads a sibling branch", sc("g2"), turnFile["t2"], false},
		{"another branch reads the common first turn", sc("g2"), turnFile["t1"], true},
		{"a job outside the conversation", sc("run-1"), turnFile["t1"], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Get(ctx, tc.reader, tc.ref)
			if tc.ok {
				if err != nil {
					t.Fatalf("got %v, want the file", err)
				}
				return
			}
			sameRefusal(t, err, notFoundOf(t, tc.ref))
			_, serr := s.Stat(ctx, tc.reader, tc.ref)
			sameRefusal(t, serr, notFoundOf(t, tc.ref))
		})
	}
}

func TestHand(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.s
	const tenant = "acme"
	archive := mustPut(t, s, Scope{Tenant: tenant, Tree: "download"}, []byte("archive bytes"))
	private := mustPut(t, s, Scope{Tenant: tenant, Tree: "someone-elses-chat"}, []byte("private"))
	fixer := Scope{Tenant: tenant, Tree: "fixer"}
	if _, err := s.Get(ctx, fixer, archive); errs.ClassOf(err) != errs.NotFound {
		t.Fatalf("before the hand-over: got %v, want not found", err)
	}

	t.Run("audit failure hands nothing", func(t *testing.T) {
		f.ev.fail = errors.New("audit log unavailable")
		defer func() { f.ev.fail = nil }()
		_, err := s.Hand(ctx, Scope{Tenant: tenant, Tree: "download"}, "fixer", []Ref{archive}, "alice")
		if err == nil {
			t.Fatal("got a hand-over without its audit event, want an error")
		}
		if _, err := s.Get(ctx, fixer, archive); errs.ClassOf(err) != errs.NotFound {
			t.Fatalf("got %v, want not found: the failed hand-over must not grant", err)
		}
	})

	t.Run("handed and audited; unreadable left out", func(t *testing.T) {
		handed, err := s.Hand(ctx, Scope{Tenant: tenant, Tree: "download"}, "fixer", []Ref{archive, private}, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]Ref{archive}, handed, cmp.Comparer(func(a, b Ref) bool { return a == b })); d != "" {
			t.Errorf("handed (-want +got):\n%s", d)
		}
		if _, err := s.Get(ctx, fixer, archive); err != nil {
			t.Errorf("the handed file: got %v, want it readable", err)
		}
		sameRefusal(t, func() error { _, err := s.Get(ctx, fixer, private); return err }(), notFoundOf(t, private))
		evs := f.ev.all()
		if len(evs) != 1 {
			t.Fatalf("got %d events, want 1", len(evs))
		}
		want := Event{Type: EventHanded, Tenant: tenant, Tree: "fixer", By: "alice", Refs: []string{archive.String()}, Omitted: 1, At: f.clk.Now()}
		if d := cmp.Diff(want, evs[0]); d != "" {
			t.Errorf("event (-want +got):\n%s", d)
		}
	})

	t.Run("a hand-over does not reach other trees", func(t *testing.T) {
		if _, err := s.Get(ctx, Scope{Tenant: tenant, Tree: "bystander"}, archive); errs.ClassOf(err) != errs.NotFound {
			t.Errorf("got %v, want not found", err)
		}
	})
}

// TestNotFoundIndistinguishable compares, for one reference, the answers to
// a file never stored, another tree's, another tenant's and an erased one:
// class, message and the absence of any cause must all be identical.
func TestNotFoundIndistinguishable(t *testing.T) {
	f := newFixture(t, Options{})
	data := []byte("the secret the digest names")
	r := RefOf(data)
	never := notFoundOf(t, r)
	mustPut(t, f.s, Scope{Tenant: "acme", Tree: "owner"}, data)
	mustPut(t, f.s, Scope{Tenant: "acme", Tree: "erased"}, []byte("gone"))
	gone := RefOf([]byte("gone"))
	if _, err := f.s.Erase(ctx, Erasure{Tenant: "acme", Tree: "erased"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sc   Scope
		ref  Ref
	}{
		{"another tree", Scope{Tenant: "acme", Tree: "job-1"}, r},
		{"another tenant", Scope{Tenant: "globex", Tree: "owner"}, r},
		{"erased", Scope{Tenant: "acme", Tree: "erased"}, gone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := never
			if tc.ref != r {
				want = notFoundOf(t, tc.ref)
			}
			_, err := f.s.Get(ctx, tc.sc, tc.ref)
			sameRefusal(t, err, want)
			_, err = f.s.Materialize(ctx, tc.sc, tc.ref, t.TempDir())
			sameRefusal(t, err, want)
		})
	}
}

func TestStartJob(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.s
	const tenant = "acme"
	step := func(name string, fn func() error, want errs.Class, ok bool) {
		t.Helper()
		err := fn()
		if ok && err != nil {
			t.Fatalf("%s: got %v, want success", name, err)
		}
		if !ok && errs.ClassOf(err) != want {
			t.Fatalf("%s: got %v (%v), want a %v error", name, err, errs.ClassOf(err), want)
		}
	}
	start := func(id, parent string) func() error {
		return func() error { _, err := s.StartJob(ctx, tenant, id, parent); return err }
	}
	step("start a new tree", start("job-7", ""), 0, true)
	mustPut(t, s, Scope{Tenant: tenant, Tree: "job-7"}, []byte("result"))
	step("start again while it runs follows it", start("job-7", ""), 0, true)
	step("end it", func() error { return s.EndJob(ctx, tenant, "job-7") }, 0, true)
	step("end it twice", func() error { return s.EndJob(ctx, tenant, "job-7") }, errs.NotFound, false)
	step("reuse the id of an ended tree that holds files", start("job-7", ""), errs.Invalid, false)
	step("start a child of an unknown parent", start("x", "nobody"), errs.NotFound, false)
	step("start a tree with no job ever registered but files held", func() error {
		mustPut(t, s, Scope{Tenant: tenant, Tree: "user-0"}, []byte("cli file"))
		_, err := s.StartJob(ctx, tenant, "user-0", "")
		return err
	}, errs.Invalid, false)
	step("an id files were handed to before its job started", func() error {
		r := mustPut(t, s, Scope{Tenant: tenant, Tree: "job-7"}, []byte("result"))
		if _, err := s.Hand(ctx, Scope{Tenant: tenant, Tree: "job-7"}, "later", []Ref{r}, "alice"); err != nil {
			return err
		}
		_, err := s.StartJob(ctx, tenant, "later", "")
		return err
	}, errs.Invalid, false)
	step("a turn's id", func() error {
		if err := s.AddTurn(ctx, tenant, "conv", "turn-1", ""); err != nil {
			return err
		}
		_, err := s.StartJob(ctx, tenant, "turn-1", "")
		return err
	}, errs.Invalid, false)
	step("an ended tree whose files are past retention may be reused", func() error {
		if _, err := s.StartJob(ctx, tenant, "old", ""); err != nil {
			return err
		}
		mustPut(t, s, Scope{Tenant: tenant, Tree: "old"}, []byte("old result"))
		if err := s.EndJob(ctx, tenant, "old"); err != nil {
			return err
		}
		f.clk.Add(DefaultRetention + time.Hour)
		_, err := s.StartJob(ctx, tenant, "old", "")
		return err
	}, 0, true)
	step("erase the ended tree", func() error { _, err := s.Erase(ctx, Erasure{Tenant: tenant, Tree: "job-7"}); return err }, 0, true)
	step("reuse the id once the tree holds nothing", start("job-7", ""), 0, true)
	if _, err := s.Get(ctx, Scope{Tenant: tenant, Tree: "job-7"}, RefOf([]byte("result"))); errs.ClassOf(err) != errs.NotFound {
		t.Fatalf("the new job-7 reads the old one's file: got %v, want not found", err)
	}
	step("an ended tree that never stored anything may be reused", func() error {
		if _, err := s.StartJob(ctx, tenant, "empty", ""); err != nil {
			return err
		}
		if err := s.EndJob(ctx, tenant, "empty"); err != nil {
			return err
		}
		_, err := s.StartJob(ctx, tenant, "empty", "")
		return err
	}, 0, true)
	if tree, err := s.TreeOf(ctx, tenant, "job-7"); err != nil || tree != "job-7" {
		t.Errorf("TreeOf = %q, %v; want job-7", tree, err)
	}
}
