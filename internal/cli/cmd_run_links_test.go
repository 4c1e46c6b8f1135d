package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkWorld is a host with a working directory W the box may write (the
// built-in profile's fs.write "." in fix mode), a state directory outside
// it, and a victim file outside both.
type linkWorld struct {
	root, work, state, victim string
}

const victimText = "export PATH=/usr/bin\n"

func newLinkWorld(t *testing.T) linkWorld {
	t.Helper()
	root := t.TempDir()
	w := linkWorld{root: root, work: filepath.Join(root, "work"), state: filepath.Join(root, "state"),
		victim: filepath.Join(root, "outside", "victim")}
	for _, d := range []string{w.work, w.state, filepath.Dir(w.victim), filepath.Join(root, "run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.reset(t)
	return w
}

func (w linkWorld) reset(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(w.victim, []byte(victimText), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (w linkWorld) victimChanged() bool {
	b, err := os.ReadFile(w.victim)
	return err != nil || string(b) != victimText
}

func (w linkWorld) plant(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(w.work, name)
	if err := os.Symlink(w.victim, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (w linkWorld) run(t *testing.T, extraEnv []string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: w.work,
		Environ: append([]string{"HOME=" + filepath.Join(w.root, "home"),
			"XDG_STATE_HOME=" + w.state, "XDG_CONFIG_HOME=" + filepath.Join(w.root, "config"),
			"XDG_RUNTIME_DIR=" + filepath.Join(w.root, "run")}, extraEnv...)}
	code := Main(context.Background(), args, env)
	return code, errb.String()
}

// TestReportNeverFollowsPlantedLink: the box planted W/r.json.tmp -> the
// victim. The old report writer (os.WriteFile of path+".tmp", then a
// rename) overwrites the victim; airlock run now refuses a report where a
// box may write, in either mode, before anything runs.
func TestReportNeverFollowsPlantedLink(t *testing.T) {
	w := newLinkWorld(t)
	report := filepath.Join(w.work, "r.json")
	w.plant(t, "r.json.tmp")

	// The old shape.
	if err := os.WriteFile(report+".tmp", []byte(`{"argv": ["$(id)"]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !w.victimChanged() {
		t.Fatal("the old report writer did not reach the victim: the test shows nothing")
	}
	w.reset(t)

	for _, mode := range []string{"fix", "observe"} {
		t.Run(mode, func(t *testing.T) {
			ran := filepath.Join(w.root, "ran-"+mode)
			code, stderr := w.run(t, nil, "run", "--mode", mode, "--sandbox", "off", "--report", report, "--", "touch", ran)
			if code == 0 || !strings.Contains(stderr, "holds airlock's own "+report) {
				t.Errorf("exit %d, stderr %q; want a refusal naming the report", code, stderr)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("the command ran before the refusal")
			}
			if w.victimChanged() {
				t.Error("the victim was changed")
			}
			if _, err := os.Lstat(report); err == nil {
				t.Errorf("%s was written", report)
			}
		})
	}
}

// TestReportOutsideTheBoxIsWrittenSafely: a report outside every box path
// is written, and links planted at its name and at the old temporary name
// are replaced, not followed.
func TestReportOutsideTheBoxIsWrittenSafely(t *testing.T) {
	w := newLinkWorld(t)
	dir := filepath.Join(w.root, "reports")
	os.Mkdir(dir, 0o700)
	report := filepath.Join(dir, "r.json")
	for _, p := range []string{report, report + ".tmp"} {
		if err := os.Symlink(w.victim, p); err != nil {
			t.Fatal(err)
		}
	}
	ran := filepath.Join(w.root, "ran")
	code, stderr := w.run(t, nil, "run", "--sandbox", "off", "--report", report, "--", "touch", ran)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
	st, err := os.Lstat(report)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("%s: got %v, %v; want a regular file", report, st, err)
	}
	if b, _ := os.ReadFile(report); !bytes.Contains(b, []byte(`"verdict": "allow"`)) {
		t.Errorf("report: %s", b)
	}
	if w.victimChanged() {
		t.Error("the victim was changed")
	}
}

// TestTraceFileNeverFollowsPlantedLink: AIRLOCK_TRACE_FILE naming a link
// the box planted. The old open (O_APPEND|O_CREATE) appends to the victim;
// now a trace file where a box may write is refused, and one outside whose
// name is a link is refused too.
func TestTraceFileNeverFollowsPlantedLink(t *testing.T) {
	w := newLinkWorld(t)
	trace := w.plant(t, "trace.json")

	// The old shape.
	f, err := os.OpenFile(trace, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("span\n")
	f.Close()
	if !w.victimChanged() {
		t.Fatal("the old trace open did not reach the victim: the test shows nothing")
	}
	w.reset(t)

	outside := filepath.Join(w.root, "traces", "trace.json")
	os.MkdirAll(filepath.Dir(outside), 0o700)
	if err := os.Symlink(w.victim, outside); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, mode, want string
	}{
		{"in the box's directory, fix", trace, "fix", "holds airlock's own " + trace},
		{"in the box's directory, observe", trace, "observe", "holds airlock's own " + trace},
		{"a link outside", outside, "observe", "symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := w.run(t, []string{"AIRLOCK_TRACE_FILE=" + tt.file}, "run", "--mode", tt.mode, "--sandbox", "off", "--", "true")
			if code == 0 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want a refusal mentioning %q", code, stderr, tt.want)
			}
			if w.victimChanged() {
				t.Error("the victim was changed")
			}
		})
	}
}
