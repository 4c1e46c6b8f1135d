package approvals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlock-run/airlock/policy"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func sampleGrants() []policy.Grant {
	return []policy.Grant{
		{Kind: "argv", Argv: []string{"git", "push", "origin", "main"}, Created: t0},
		{Kind: "argv", Argv: []string{"rm", "-r", "/tmp/x y", "quote\"back\\slash", "nl\nesc\x1b[2K\u202egnp.exe", "emoji😀", "tag\U000E0041"}, Created: t0},
		{Kind: "tool", Tool: "search.web", Args: map[string]any{"query": "weather", "n": float64(3), "deep": map[string]any{"list": []any{true, nil, "x"}}}, Created: t0},
		{Kind: "tool", Tool: "clock.now", Created: t0},
	}
}

func TestGrantsRoundTrip(t *testing.T) {
	for _, name := range []string{"grants.yaml", "grants.json"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cfg", name)
			want := sampleGrants()
			for _, g := range want {
				line, err := SaveGrant(path, g)
				if err != nil {
					t.Fatal(err)
				}
				shown, _ := GrantLine(path, g)
				if line != shown {
					t.Errorf("saved line %s, shown %s", line, shown)
				}
				for _, r := range line {
					if r < 0x20 || r > 0x7e {
						t.Fatalf("grant line holds %U: %s", r, line)
					}
				}
			}
			// Saving an equal grant again adds nothing.
			if _, err := SaveGrant(path, want[0]); err != nil {
				t.Fatal(err)
			}
			got, err := LoadGrants(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("grants (-want +got):\n%s", diff)
			}
			data, _ := os.ReadFile(path)
			for _, g := range want {
				line, _ := GrantLine(path, g)
				if !strings.Contains(string(data), line) {
					t.Errorf("file does not hold the shown line verbatim: %s", line)
				}
			}
			st, _ := os.Stat(path)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("mode: got %v, want 0600", st.Mode().Perm())
			}
		})
	}
}

func TestSaveGrantKeepsHandEdits(t *testing.T) {
	tests := []struct {
		name, before, after string
	}{
		{"comments and indented list",
			"# mine\ngrants:\n  # the deploy one\n  - {\"kind\": \"argv\", \"argv\": [\"make\", \"deploy\"]}\n",
			"# mine\ngrants:\n  # the deploy one\n  - {\"kind\": \"argv\", \"argv\": [\"make\", \"deploy\"]}\n  - LINE\n"},
		{"block mapping items, no final newline",
			"grants:\n- kind: argv\n  argv: [make, test]",
			"grants:\n- kind: argv\n  argv: [make, test]\n- LINE\n"},
		{"empty list", "grants:\n", "grants:\n- LINE\n"},
	}
	g := policy.Grant{Kind: "argv", Argv: []string{"git", "push"}, Created: t0}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "grants.yaml")
			os.WriteFile(path, []byte(tc.before), 0o600)
			line, err := SaveGrant(path, g)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if diff := cmp.Diff(strings.Replace(tc.after, "LINE", line, 1), string(got)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("flow list is rewritten with a backup", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "grants.yaml")
		before := "grants: [{kind: argv, argv: [make]}]\n"
		os.WriteFile(path, []byte(before), 0o600)
		if _, err := SaveGrant(path, g); err != nil {
			t.Fatal(err)
		}
		gs, err := LoadGrants(path)
		if err != nil || len(gs) != 2 {
			t.Fatalf("got %v, %v; want both grants", gs, err)
		}
		bak, _ := os.ReadFile(path + ".bak")
		if string(bak) != before {
			t.Errorf("backup: got %q, want the old file", bak)
		}
	})
}

func TestGrantsCorrupt(t *testing.T) {
	tests := []struct {
		name, file, data, want string
	}{
		{"yaml syntax", "g.yaml", "grants:\n- {\"kind\": \"argv\"\n", "g.yaml:1: "},
		{"tab indentation", "g.yaml", "grants:\n\t- x\n", "g.yaml:2: "},
		{"not a mapping", "g.yaml", "- a\n", "g.yaml:1: want a mapping"},
		{"unknown top key", "g.yaml", "grants: []\nextra: 1\n", "g.yaml:2: unknown key extra"},
		{"grants not a list", "g.yaml", "grants: 3\n", "g.yaml:1: grants: want a list"},
		{"unknown entry key", "g.yaml", "grants:\n- kind: argv\n  argv: [ls]\n  prefix: true\n", "g.yaml:4: grants[0]: unknown key prefix"},
		{"wrong type", "g.yaml", "grants:\n- kind: argv\n  argv: ls\n", "g.yaml:2: grants[0]: "},
		{"bad kind", "g.yaml", "grants:\n- {kind: argv}\n- {kind: prefix, argv: [ls]}\n", "g.yaml:2: grants[0]: an argv grant needs a program"},
		{"interpreter grant", "g.yaml", "grants:\n- {kind: argv, argv: [python3, -c, 'print(1)']}\n", "g.yaml:2: grants[0]: python3 -c runs inline code"},
		{"bad time", "g.yaml", "grants:\n- {kind: argv, argv: [ls], created: yesterday}\n", "g.yaml:2: grants[0]: created"},
		{"json syntax", "g.json", "{\"grants\": [\n  {\"kind\": \"argv\",}\n]}", "g.json:2: "},
		{"json unknown field", "g.json", "{\"grants\": [\n  {\"kind\": \"argv\", \"argv\": [\"ls\"], \"x\": 1}\n]}", "g.json:2: "},
		{"json truncated", "g.json", "{\"grants\": [\n  {\"kind\": \"argv\", \"argv\": [\"ls\"]}", "g.json:2: "},
		{"json trailing", "g.json", "{\"grants\": []}\n{}", "g.json:2: unexpected text"},
		{"json wrong key", "g.json", "{\n\"grant\": []}", "g.json:2: unknown key grant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			os.WriteFile(path, []byte(tc.data), 0o600)
			_, err := LoadGrants(path)
			if err == nil {
				t.Fatalf("got no error, want %q", tc.want)
			}
			msg := strings.TrimPrefix(err.Error(), filepath.Dir(path)+"/")
			if !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("got %q, want one line starting %q", msg, tc.want)
			}
			// Saving into it fails too, and leaves every byte.
			if _, err := SaveGrant(path, policy.Grant{Kind: "argv", Argv: []string{"ls"}}); err == nil {
				t.Error("SaveGrant into a corrupt file: got no error")
			}
			if got, _ := os.ReadFile(path); string(got) != tc.data {
				t.Errorf("file changed: got %q", got)
			}
		})
	}
}

func TestGrantLineRefuses(t *testing.T) {
	for _, g := range []policy.Grant{
		{Kind: "argv", Argv: []string{"ls", "bad\xffutf8"}},
		{Kind: "argv", Argv: []string{"bash", "-c", "id"}},
		{Kind: "tool", Tool: "t", Args: map[string]any{"c": make(chan int)}},
	} {
		if line, err := GrantLine("g.yaml", g); err == nil {
			t.Errorf("%v: got %s, want an error", g, line)
		}
	}
}

func FuzzParseGrants(f *testing.F) {
	for _, g := range sampleGrants() {
		for _, name := range []string{"g.yaml", "g.json"} {
			line, _ := GrantLine(name, g)
			if name == "g.json" {
				f.Add(name, "{\"grants\": [\n  "+line+"\n]}\n")
			} else {
				f.Add(name, "grants:\n- "+line+"\n")
			}
		}
	}
	f.Add("g.yaml", "grants:\n- kind: argv\n  argv: [a, b]\n")
	f.Add("g.yaml", "&a [*a]")
	f.Add("g.json", "{\"grants\": [{\"kind\": \"tool\", \"tool\": \"x\", \"args\": {\"n\": 1e400}}]}")
	f.Fuzz(func(t *testing.T, name, data string) {
		gs, err := ParseGrants(name, []byte(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		// What parses can be written back, and reads back the same.
		for _, g := range gs {
			line, err := GrantLine(name, g)
			if err != nil {
				continue // e.g. invalid UTF-8 that the parser let through
			}
			var doc string
			if isJSON(name) {
				doc = "{\"grants\": [" + line + "]}"
			} else {
				doc = "grants:\n- " + line + "\n"
			}
			back, err := ParseGrants(name, []byte(doc))
			if err != nil || len(back) != 1 || !sameGrant(back[0], g) {
				t.Fatalf("grant %s did not read back: %v %v", line, back, err)
			}
		}
	})
}

// TestSaveGrantRefusesSteeredPaths: a directory on the way to the grants
// file that is a link someone else could have placed (here: in a directory
// anyone may write), or a hard link at the file's name, never sends the
// grant elsewhere. The old way (MkdirAll, then a temporary file renamed into
// the directory) is first seen to land outside.
func TestSaveGrantRefusesSteeredPaths(t *testing.T) {
	g := policy.Grant{Kind: "argv", Argv: []string{"ls"}, Created: t0}
	t.Run("link in a shared directory", func(t *testing.T) {
		base, outside := t.TempDir(), t.TempDir()
		shared := filepath.Join(base, "shared")
		if err := os.Mkdir(shared, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(shared, 0o777)
		if err := os.Symlink(outside, filepath.Join(shared, "cfg")); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(shared, "cfg", "grants.yaml")

		// The old way.
		os.MkdirAll(filepath.Dir(path), 0o700)
		tmp, err := os.CreateTemp(filepath.Dir(path), ".grants.yaml.*")
		if err != nil {
			t.Fatal(err)
		}
		tmp.Close()
		if err := os.Rename(tmp.Name(), path); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(outside, "grants.yaml")); err != nil {
			t.Fatalf("the old way did not land outside: the test shows nothing (%v)", err)
		}
		os.Remove(filepath.Join(outside, "grants.yaml"))

		if _, err := SaveGrant(path, g); err == nil {
			t.Fatal("SaveGrant through a planted link: got no error")
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Errorf("outside got %d entries; want none", len(ents))
		}
	})
	t.Run("hard link at the name", func(t *testing.T) {
		dir, outside := t.TempDir(), t.TempDir()
		victim := filepath.Join(outside, "victim")
		os.WriteFile(victim, []byte("grants:\n"), 0o600)
		path := filepath.Join(dir, "grants.yaml")
		if err := os.Link(victim, path); err != nil {
			t.Fatal(err)
		}
		if _, err := SaveGrant(path, g); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "grants:\n" {
			t.Errorf("victim changed: %q", b)
		}
		if got, err := LoadGrants(path); err != nil || len(got) != 1 {
			t.Errorf("grants file: got %v, %v; want the one grant", got, err)
		}
	})
}
