package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-run/airlock/errs"
)

func TestRetention(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.s
	a := Scope{Tenant: "acme", Tree: "a"}
	b := Scope{Tenant: "acme", Tree: "b"}
	held := Scope{Tenant: "acme", Tree: "held"}
	shared := []byte("stored by two trees")
	r := mustPut(t, s, a, shared)
	mustPut(t, s, held, []byte("under a legal hold"))
	f.clk.Add(30 * 24 * time.Hour)
	mustPut(t, s, b, shared) // b stores it 30 days later
	if err := s.PlaceHold(ctx, "acme", "case-42", "held", "litigation"); err != nil {
		t.Fatal(err)
	}
	if err := s.PlaceHold(ctx, "acme", "case-42", "", "again"); errs.ClassOf(err) != errs.Invalid {
		t.Errorf("a second hold of the same name: got %v, want invalid", err)
	}
	readable := func(sc Scope, data string) bool {
		_, err := s.Get(ctx, sc, RefOf([]byte(data)))
		return err == nil
	}

	f.clk.Add(59 * 24 * time.Hour) // day 89 for a
	if rep, err := s.GC(ctx); err != nil || rep.Expired != 0 {
		t.Fatalf("GC on day 89: %+v, %v; want nothing expired", rep, err)
	}
	f.clk.Add(2 * 24 * time.Hour) // day 91 for a, day 61 for b
	rep, err := s.GC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Expired != 1 || rep.Removed != 0 {
		t.Errorf("GC on day 91: got %+v, want a's claim expired and the file kept for b", rep)
	}
	if readable(a, string(shared)) {
		t.Error("a still reads the file 91 days after it last stored it")
	}
	if !readable(b, string(shared)) {
		t.Error("b lost the file 61 days after storing it")
	}
	if !readable(held, "under a legal hold") {
		t.Error("the held file is gone")
	}
	f.clk.Add(30 * 24 * time.Hour) // day 91 for b
	if rep, err := s.GC(ctx); err != nil || rep.Removed != 1 {
		t.Errorf("GC after b's retention: %+v, %v; want one file removed", rep, err)
	}
	if _, err := os.Stat(s.blobPath("acme", r, false)); !os.IsNotExist(err) {
		t.Errorf("the removed file's blob is still on disk (%v)", err)
	}
	if !readable(held, "under a legal hold") {
		t.Error("the hold did not keep its file past retention")
	}
	if err := s.ReleaseHold(ctx, "acme", "case-42"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseHold(ctx, "acme", "case-42"); errs.ClassOf(err) != errs.NotFound {
		t.Errorf("releasing twice: got %v, want not found", err)
	}
	if rep, err := s.GC(ctx); err != nil || rep.Removed != 1 {
		t.Errorf("GC after the release: %+v, %v; want the held file removed", rep, err)
	}
	if n := countFiles(t, filepath.Join(f.dir, "blobs")); n != 0 {
		t.Errorf("got %d blobs left, want none", n)
	}
}

func TestRestoringRestartsRetention(t *testing.T) {
	f := newFixture(t, Options{})
	sc := Scope{Tenant: "acme", Tree: "a"}
	r := mustPut(t, f.s, sc, []byte("x"))
	f.clk.Add(80 * 24 * time.Hour)
	mustPut(t, f.s, sc, []byte("x"))
	f.clk.Add(20 * 24 * time.Hour)
	if _, err := f.s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Get(ctx, sc, r); err != nil {
		t.Errorf("got %v, want the file kept 90 days after it was last stored", err)
	}
}

// TestExpiredBeforeCollection checks that retention holds for reads even
// when no collection has run: a claim past retention reads as not found.
func TestExpiredBeforeCollection(t *testing.T) {
	f := newFixture(t, Options{})
	sc := Scope{Tenant: "acme", Tree: "a"}
	r := mustPut(t, f.s, sc, []byte("x"))
	if _, err := f.s.Hand(ctx, sc, "b", []Ref{r}, "alice"); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(DefaultRetention + time.Minute)
	for _, tree := range []string{"a", "b"} {
		if _, err := f.s.Get(ctx, Scope{Tenant: "acme", Tree: tree}, r); errs.ClassOf(err) != errs.NotFound {
			t.Errorf("tree %s: got %v, want not found past retention", tree, err)
		}
	}
	if err := f.s.PlaceHold(ctx, "acme", "h", "a", ""); err != nil {
		t.Fatal(err)
	}
	for _, tree := range []string{"a", "b"} {
		if _, err := f.s.Get(ctx, Scope{Tenant: "acme", Tree: tree}, r); err != nil {
			t.Errorf("tree %s under a hold: got %v, want the file", tree, err)
		}
	}
}

func TestErase(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.s
	put := func(tree, job, data string) Ref {
		return mustPut(t, s, Scope{Tenant: "acme", Tree: tree, Job: job}, []byte(data))
	}
	a1 := put("a", "a", "a's own")
	a2 := put("a", "a.sub", "sub-job's")
	shared := put("a", "a.sub", "both")
	put("b", "b", "both")
	other := mustPut(t, s, Scope{Tenant: "globex", Tree: "a"}, []byte("a's own"))
	if _, err := s.Hand(ctx, Scope{Tenant: "acme", Tree: "a"}, "c", []Ref{a1}, "alice"); err != nil {
		t.Fatal(err)
	}
	get := func(tenant, tree string, r Ref) error {
		_, err := s.Get(ctx, Scope{Tenant: tenant, Tree: tree}, r)
		return err
	}

	n, err := s.Erase(ctx, Erasure{Tenant: "acme", Job: "a.sub", By: "dpo"})
	if err != nil || n != 1 {
		t.Fatalf("erase job a.sub: %d, %v; want 1 file removed (the shared one stays for b)", n, err)
	}
	if get("acme", "a", a2) == nil {
		t.Error("the erased job's file is still readable")
	}
	if get("acme", "b", shared) != nil {
		t.Error("b lost the file it stored too")
	}
	if get("acme", "a", a1) != nil {
		t.Error("erasing a sub-job took its root's file")
	}

	if err := s.PlaceHold(ctx, "acme", "keep-a", "a", ""); err != nil {
		t.Fatal(err)
	}
	_, err = s.Erase(ctx, Erasure{Tenant: "acme", Tree: "a"})
	if errs.ClassOf(err) != errs.Denied || !strings.Contains(err.Error(), "keep-a") {
		t.Errorf("erase under a hold: got %v, want denied naming the hold", err)
	}
	if get("acme", "a", a1) != nil {
		t.Error("a refused erasure removed a file")
	}
	if err := s.ReleaseHold(ctx, "acme", "keep-a"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Erase(ctx, Erasure{Tenant: "acme", Tree: "a", By: "dpo"}); err != nil || n != 1 {
		t.Fatalf("erase tree a: %d, %v; want 1", n, err)
	}
	if get("acme", "c", a1) == nil {
		t.Error("a file handed from an erased tree is still readable")
	}
	if get("globex", "a", other) != nil {
		t.Error("erasing a tree of one tenant reached another tenant")
	}
	if n, err := s.Erase(ctx, Erasure{Tenant: "acme", By: "dpo"}); err != nil || n != 1 {
		t.Fatalf("erase tenant: %d, %v; want 1 (b's file)", n, err)
	}
	if _, err := os.Stat(s.tenantDir("acme")); !os.IsNotExist(err) {
		t.Errorf("the erased tenant's blob directory remains (%v)", err)
	}
	var types []string
	for _, e := range f.ev.all() {
		types = append(types, e.Type+":"+e.Job+e.Tree)
	}
	want := "job.files_handed:c files.erased:a.sub files.erased:a files.erased:"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events: got %q, want %q", got, want)
	}
}
