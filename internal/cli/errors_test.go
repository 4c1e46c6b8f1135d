package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// leafPaths lists every command that runs something, as its words.
func leafPaths() [][]string {
	var out [][]string
	var walk func(prefix []string, cs []*Command)
	walk = func(prefix []string, cs []*Command) {
		for _, c := range cs {
			p := append(append([]string(nil), prefix...), c.Name)
			if len(c.Sub) > 0 {
				walk(p, c.Sub)
			}
			if c.Run != nil {
				out = append(out, p)
			}
		}
	}
	walk(nil, commands())
	return out
}

// checkErrorLine checks stderr is one line "airlock: CMD: message" with no
// prefix said twice.
func checkErrorLine(t *testing.T, cmd, stderr string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("stderr %q: want exactly one line", stderr)
	}
	prefix := "airlock: " + cmd + ": "
	if !strings.HasPrefix(stderr, prefix) {
		t.Errorf("stderr %q: want it to start with %q", stderr, prefix)
	}
	rest := strings.TrimPrefix(stderr, prefix)
	for _, doubled := range []string{"airlock: ", "airlock " + cmd + ":", cmd + ": "} {
		if strings.HasPrefix(rest, doubled) {
			t.Errorf("stderr %q: the prefix is said twice (%q)", stderr, doubled)
		}
	}
}

// checkJSONError checks stdout is exactly one JSON error object with code.
func checkJSONError(t *testing.T, stdout, code string) {
	t.Helper()
	var v struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || v.Error == nil {
		t.Fatalf("stdout %q: want {\"error\": {...}} (%v)", stdout, err)
	}
	if dec.More() {
		t.Errorf("stdout %q: more than one JSON value", stdout)
	}
	if v.Error.Code != code || v.Error.Message == "" || strings.HasPrefix(v.Error.Message, "airlock") {
		t.Errorf("got error %+v, want code %q and a message without the airlock prefix", *v.Error, code)
	}
}

// handedOver are the commands the airlock binary leaves to the binaries
// that link Temporal or the MCP SDK.
var handedOver = map[string]string{"node": "airlock-node", "server": "airlock-server",
	"mcp serve": "airlock-mcp", "mcp wrap": "airlock-mcp"}

var jsonFlag = regexp.MustCompile(`(?m)^\s+-json\b`)

// TestEveryCommandUsageError: every command refuses an unknown flag with
// exit 2 and one line "airlock: CMD: ..."; each that takes --json also
// prints a JSON error object on standard output when --json was given.
func TestEveryCommandUsageError(t *testing.T) {
	for _, p := range leafPaths() {
		cmd := strings.Join(p, " ")
		t.Run(cmd, func(t *testing.T) {
			dir := t.TempDir()
			code, out, errOut := runIn(t, dir, append(p, "--no-such-flag")...)
			if bin, ok := handedOver[cmd]; ok {
				// The binary that runs it parses its flags; this one
				// names that binary (none is beside the test).
				if code != 125 || !strings.Contains(errOut, bin) {
					t.Errorf("got exit %d, stderr %q; want 125 naming %s", code, errOut, bin)
				}
				checkErrorLine(t, cmd, errOut)
				return
			}
			if code != 2 {
				t.Errorf("got exit %d, want 2 (stderr %q)", code, errOut)
			}
			checkErrorLine(t, cmd, errOut)
			if out != "" {
				t.Errorf("stdout %q, want nothing without --json", out)
			}
			_, help, _ := runIn(t, dir, append(p, "--help")...)
			if !jsonFlag.MatchString(help) {
				return
			}
			for _, args := range [][]string{
				append(append([]string(nil), p...), "--json", "--no-such-flag"),
				append(append([]string(nil), p...), "--no-such-flag", "--json"),
			} {
				code, out, errOut := runIn(t, dir, args...)
				if code != 2 {
					t.Errorf("%v: got exit %d, want 2", args, code)
				}
				checkErrorLine(t, cmd, errOut)
				checkJSONError(t, out, "usage")
			}
		})
	}
}

// TestErrorShapes: failures other than flag mistakes keep the same line, the
// exit code of their class, and the JSON error object under --json.
func TestErrorShapes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "bad.yaml", "shell:\n  alow: [git]\n")
	zero := "airlock-file:sha256:" + strings.Repeat("1", 64)
	tests := []struct {
		name     string
		args     []string
		cmd      string
		code     int
		jsonCode string // "" when the command has no --json or it was not given
		contains string
	}{
		{"missing command", []string{"run"}, "run", 2, "", "no command"},
		{"bad mode", []string{"run", "--mode", "write", "--", "true"}, "run", 2, "", `--mode "write"`},
		{"bad sandbox", []string{"run", "--sandbox", "3", "--", "true"}, "run", 2, "", "--sandbox"},
		{"missing workdir", []string{"run", "--workdir", "nope", "--", "true"}, "run", 2, "", "--workdir"},
		{"missing policy", []string{"run", "--policy", "nope.yaml", "--", "true"}, "run", 2, "", "--policy nope.yaml: no such file"},
		{"invalid policy", []string{"run", "--policy", "bad.yaml", "--", "true"}, "run", 125, "", "bad.yaml:2:3: shell.alow"},
		{"explain invalid policy json", []string{"policy", "explain", "--json", "--policy", "bad.yaml", "--", "ls"}, "policy explain", 125, "invalid", "shell.alow"},
		{"explain missing policy json", []string{"policy", "explain", "--json", "--policy", "nope.yaml", "--", "ls"}, "policy explain", 2, "usage", "no such file"},
		{"show extra argument", []string{"policy", "show", "x"}, "policy show", 2, "", "unexpected argument"},
		{"check missing file json", []string{"policy", "check", "--json", "nope.yaml"}, "policy check", 2, "usage", "no such file"},
		{"files get unknown", []string{"files", "get", zero}, "files get", 125, "", "not found"},
		{"files get bad ref", []string{"files", "get", "airlock-file:sha256:abc"}, "files get", 2, "", "64 hex digits"},
		{"files ls extra json", []string{"files", "ls", "--json", "x"}, "files ls", 2, "usage", "got 1 arguments"},
		{"read-result bad ref json", []string{"read-result", "--json", "nope"}, "read-result", 2, "usage", "file reference"},
		{"read-result unknown json", []string{"read-result", zero, "--json"}, "read-result", 125, "not_found", "not found"},
		{"audit verify missing json", []string{"audit", "verify", "--json", filepath.Join(dir, "none.jsonl")}, "audit verify", 125, "unavailable", "none.jsonl"},
		{"tokens two files json", []string{"tokens", "--json", "a", "b"}, "tokens", 2, "usage", "one FILE at most"},
		{"fit bad view json", []string{"fit", "--json", "--view", "all"}, "fit", 2, "usage", "not a view"},
		{"fit negative budget", []string{"fit", "--budget", "-5"}, "fit", 2, "", "--budget"},
		{"read-result negative budget", []string{"read-result", "--budget", "-3", zero}, "read-result", 2, "", "--budget -3"},
		{"files put missing key file", []string{"files", "put", "--key-file", "nope.key", "-"}, "files put", 2, "", "--key-file nope.key: no such file"},
		{"approvals decide bad answer json", []string{"approvals", "decide", "x", "maybe", "--json"}, "approvals decide", 2, "usage", "answer with"},
		{"approvals list extra", []string{"approvals", "list", "x"}, "approvals list", 2, "", "no arguments"},
		{"group without command", []string{"files"}, "files", 2, "", "a command is required"},
		{"unknown subcommand", []string{"policy", "frob"}, "policy", 2, "", `unknown command "frob"`},
		{"completion bad shell", []string{"completion", "fish"}, "completion", 2, "", "bash or zsh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runIn(t, dir, tt.args...)
			if code != tt.code {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if tt.cmd == "files" || tt.cmd == "policy" {
				// A group prints its help on standard output, then the line.
				out = ""
			}
			checkErrorLine(t, tt.cmd, errOut)
			if !strings.Contains(errOut, tt.contains) {
				t.Errorf("stderr %q: want it to contain %q", errOut, tt.contains)
			}
			if tt.jsonCode != "" {
				checkJSONError(t, out, tt.jsonCode)
			} else if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}

// TestBadGrantsFileIsSeen: a grants file with an entry that cannot be used
// stops run with FILE:LINE and the fix, instead of running without it.
func TestBadGrantsFileIsSeen(t *testing.T) {
	home := t.TempDir()
	grants := filepath.Join(home, "config", "airlock", "grants.yaml")
	if err := os.MkdirAll(filepath.Dir(grants), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Dir(grants), "grants.yaml", "grants:\n  - {kind: argv, argv: [git, push]}\n  - {kind: argv, argv: [bash, -c, 'curl x | sh']}\n")
	dir := t.TempDir()
	writeFile(t, dir, "airlock.yaml", "isolation: none\nshell:\n  allow: [\"true\"]\n")
	code, _, errOut := runHome(t, dir, home, "run", "--sandbox", "off", "--", "true")
	if code != 125 {
		t.Errorf("got exit %d, want 125 (stderr %q)", code, errOut)
	}
	checkErrorLine(t, "run", errOut)
	for _, want := range []string{grants + ":3:", "grants[1]", "inline code", "fix or remove it"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q: want it to contain %q", errOut, want)
		}
	}
}
