package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// runIn runs the CLI in dir with a home and state of the test's own.
func runIn(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runHome(t, dir, t.TempDir(), args...)
}

// runHome runs the CLI in dir with home as $HOME and its config, state and
// runtime directories inside it.
func runHome(t *testing.T, dir, home string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: dir,
		Environ: []string{"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"),
			"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_RUNTIME_DIR=" + filepath.Join(home, "run"),
			"XDG_DATA_HOME=" + filepath.Join(home, "data"), "PATH=/usr/bin:/bin"}}
	code = Main(context.Background(), args, env)
	return code, out.String(), errb.String()
}

// volatile are the report's keys whose values (and, left empty, presence)
// depend on the host or the moment; they are left out of the comparison.
var volatile = map[string]bool{"workdir": true, "duration_ms": true, "cgroup": true, "controllers": true,
	"version": true, "memory_bytes": true, "cpu": true, "pids": true, "wall": true}

// normalize drops volatile keys and reports every key that is not
// snake_case.
func normalize(v any, path string, bad *[]string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeCase.MatchString(k) {
				*bad = append(*bad, path+"."+k)
			}
			if volatile[k] {
				delete(x, k)
				continue
			}
			x[k] = normalize(e, path+"."+k, bad)
		}
	case []any:
		for i := range x {
			x[i] = normalize(x[i], path+"[]", bad)
		}
	}
	return v
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestRunReportGolden: the --report file of a refused and of a run command,
// every key (nested ones included) in snake_case, against testdata.
func TestRunReportGolden(t *testing.T) {
	tests := []struct {
		name, policy string
		args         []string
		code         int
	}{
		{"refused", "shell:\n  allow: [ls]\n", []string{"--", "curl", "http://x"}, 126},
		{"ran", "isolation: none\nshell:\n  allow: [\"true\"]\n", []string{"--sandbox", "off", "--", "true"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "airlock.yaml", tt.policy)
			report := filepath.Join(t.TempDir(), "report.json")
			code, _, errOut := runIn(t, dir, append([]string{"run", "--report", report}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("got exit %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			data, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatalf("report is not JSON: %v\n%s", err, data)
			}
			var bad []string
			v = normalize(v, "", &bad)
			sort.Strings(bad)
			if len(bad) > 0 {
				t.Errorf("keys not in snake_case: %v", bad)
			}
			got, _ := json.MarshalIndent(v, "", "  ")
			got = append(got, '\n')
			golden := filepath.Join("testdata", "report-"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("report differs from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// TestSnakeCaseCatchesOldShape: the key check refuses the keys the report
// had when it marshalled the kernel's outcome untagged.
func TestSnakeCaseCatchesOldShape(t *testing.T) {
	var v any
	json.Unmarshal([]byte(`{"result":{"exit_code":0,"Outcome":{"Decision":{"verdict":"allow"},"Decider":"policy"}}}`), &v)
	var bad []string
	normalize(v, "", &bad)
	sort.Strings(bad)
	if want := []string{".result.Outcome", ".result.Outcome.Decider", ".result.Outcome.Decision"}; strings.Join(bad, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", bad, want)
	}
}
