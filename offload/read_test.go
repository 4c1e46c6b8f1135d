package offload

import (
	"os"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
	"github.com/airlock-run/airlock/fit"
)

func offloaded(t *testing.T, st *files.Store, text string) string {
	t.Helper()
	out, err := (&Offloader{Store: st, Threshold: 1000}).Offload(ctx, scope, "acme.tool", text)
	if err != nil {
		t.Fatal(err)
	}
	if out.Stub == nil {
		t.Fatal("not offloaded")
	}
	return out.Stub.Offloaded.Ref
}

func TestReadResult(t *testing.T) {
	st := newStore(t)
	md := offloaded(t, st, markdownDoc())
	js := offloaded(t, st, jsonDoc())
	arr := offloaded(t, st, jsonArray())
	logRef := offloaded(t, st, logText())
	readForm := fit.ReadForm(jsonDoc(), fit.JSON)
	formLines := strings.SplitAfter(readForm, "\n")

	for _, tc := range []struct {
		name     string
		args     Args
		view     fit.View
		contains []string
		absent   []string
	}{
		{"a heading", Args{Ref: md, Section: "Part 7"}, fit.Section,
			[]string{"## Part 7", "Part 7 begins here", "item 7.11"}, []string{"## Part 8"}},
		{"a top-level key", Args{Ref: js, Section: "source"}, fit.Section,
			[]string{`"inventory"`}, []string{"widget 5"}},
		{"an item", Args{Ref: arr, Section: "[3]"}, fit.Section,
			[]string{"entry number 3 of"}, []string{"entry number 4 "}},
		{"lines of the read form of one-line JSON", Args{Ref: js, Range: "5-8"}, fit.Section,
			[]string{strings.Join(formLines[4:8], "")}, []string{formLines[8]}},
		{"lines of a log", Args{Ref: logRef, Range: "120-122"}, fit.Section,
			[]string{"processed batch 119 ", "processed batch 121 "}, []string{"processed batch 122 "}},
		{"the stub view", Args{Ref: md, View: "stub", Budget: 600}, fit.Stub,
			[]string{"Markdown document", "# Release notes"}, nil},
		{"nothing asked: the biggest view that fits the default budget", Args{Ref: logRef}, "",
			nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := (&Offloader{Store: st}).ReadResult(ctx, scope, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if tc.view == "" && (res.Note.View == fit.Summary || res.Note.View == fit.Stub) {
				// Which outline view fits is fit's choice; it must be
				// one of them, the whole being far over the budget.
			} else if res.Note.View != tc.view {
				t.Errorf("got view %q, want %q (note %+v)", res.Note.View, tc.view, res.Note)
			}
			budget := tc.args.Budget
			if budget == 0 {
				budget = fit.DefaultBudget(0, false)
			}
			if res.Note.Budget != budget || res.Note.Tokens > budget {
				t.Errorf("got note %+v, want budget %d kept", res.Note, budget)
			}
			for _, s := range tc.contains {
				if !strings.Contains(res.Text, s) {
					t.Errorf("got %q…, want it to contain %q", head(res.Text), s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(res.Text, s) {
					t.Errorf("got %q…, want it without %q", head(res.Text), s)
				}
			}
		})
	}
}

func head(s string) string {
	if len(s) > 300 {
		return s[:300]
	}
	return s
}

func TestReadResultRefusals(t *testing.T) {
	st := newStore(t)
	ref := offloaded(t, st, markdownDoc())
	never := files.RefOf([]byte("never stored")).String()
	_, neverErr := ReadResult(ctx, st, scope, Args{Ref: never})
	for _, tc := range []struct {
		name  string
		sc    files.Scope
		args  Args
		class errs.Class
		same  bool // the answer must equal the never-stored one
	}{
		{"another tree", files.Scope{Tenant: "acme", Tree: "job-2"}, Args{Ref: ref}, errs.NotFound, true},
		{"another tenant", files.Scope{Tenant: "globex", Tree: "job-1"}, Args{Ref: ref}, errs.NotFound, true},
		{"malformed ref", scope, Args{Ref: "airlock-file:sha256:1234"}, errs.Invalid, false},
		{"section and range", scope, Args{Ref: ref, Section: "Part 1", Range: "1-2"}, errs.Invalid, false},
		{"bad range", scope, Args{Ref: ref, Range: "9-3"}, errs.Invalid, false},
		{"range from zero", scope, Args{Ref: ref, Range: "0-3"}, errs.Invalid, false},
		{"not a range", scope, Args{Ref: ref, Range: "lines 3 to 9"}, errs.Invalid, false},
		{"bad view", scope, Args{Ref: ref, View: "everything"}, errs.Invalid, false},
		{"negative budget", scope, Args{Ref: ref, Budget: -1}, errs.Invalid, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.same {
				// Ask for the never-stored ref's answer with this ref.
				_, neverErr = ReadResult(ctx, newStore(t), scope, Args{Ref: args.Ref})
			}
			_, err := ReadResult(ctx, st, tc.sc, args)
			if errs.ClassOf(err) != tc.class {
				t.Fatalf("got %v (%v), want %v", err, errs.ClassOf(err), tc.class)
			}
			if tc.same && err.Error() != neverErr.Error() {
				t.Errorf("got %q, want exactly the never-stored answer %q", err, neverErr)
			}
		})
	}
}

func TestHandFiles(t *testing.T) {
	st := newStore(t)
	archive := []byte("tarball bytes")
	r, err := KeepResource(ctx, st, scope, files.RefOf(archive).String(), archive)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a lying resource is refused", func(t *testing.T) {
		_, err := KeepResource(ctx, st, scope, r.String(), []byte("other bytes"))
		if errs.ClassOf(err) != errs.Invalid {
			t.Errorf("got %v, want invalid", err)
		}
	})
	t.Run("bound into the box", func(t *testing.T) {
		host := t.TempDir()
		h, err := HandFiles(ctx, st, scope, map[string]any{"archive": r.String(), "verbose": true}, host, "/run/airlock/files")
		if err != nil {
			t.Fatal(err)
		}
		dst := "/run/airlock/files/" + r.Hex()
		if h.Meta[r.String()] != dst || len(h.Binds) != 1 || h.Binds[0].Dst != dst {
			t.Fatalf("got %+v, want the file at %s", h, dst)
		}
		b, err := os.ReadFile(h.Binds[0].Src)
		if err != nil || string(b) != string(archive) {
			t.Errorf("the bound file: %q, %v", b, err)
		}
	})
	t.Run("no box: host paths", func(t *testing.T) {
		host := t.TempDir()
		h, err := HandFiles(ctx, st, scope, map[string]any{"archive": r.String()}, host, "")
		if err != nil || !strings.HasPrefix(h.Meta[r.String()], host) || len(h.Binds) != 0 {
			t.Fatalf("got %+v, %v", h, err)
		}
	})
	t.Run("another tree's ref", func(t *testing.T) {
		host := t.TempDir()
		_, err := HandFiles(ctx, st, files.Scope{Tenant: "acme", Tree: "other"}, map[string]any{"archive": r.String()}, host, "/box")
		if errs.ClassOf(err) != errs.NotFound {
			t.Fatalf("got %v, want not found", err)
		}
		if ents, _ := os.ReadDir(host); len(ents) != 0 {
			t.Errorf("a refused hand-over wrote %d files", len(ents))
		}
	})
	t.Run("no refs", func(t *testing.T) {
		h, err := HandFiles(ctx, st, scope, map[string]any{"path": "/etc"}, t.TempDir(), "/box")
		if err != nil || len(h.Meta) != 0 {
			t.Fatalf("got %+v, %v", h, err)
		}
	})
}

// FuzzArgs feeds read_result arbitrary part names: the arguments either
// give a defined answer or an Invalid error, never a panic.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{"120-180", "1-1", "0-3", "9-3", "-", "1-", "a-b", "99999999999999999999-1", "[3]", " 4 - 7 "} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, rng, section string) {
		q, err := Args{Range: rng, Section: section}.query()
		if err != nil {
			if errs.ClassOf(err) != errs.Invalid {
				t.Fatalf("got %v, want invalid", err)
			}
			return
		}
		if strings.TrimSpace(rng) != "" && q != strings.TrimSpace(rng) {
			t.Fatalf("range %q became query %q", rng, q)
		}
	})
}
