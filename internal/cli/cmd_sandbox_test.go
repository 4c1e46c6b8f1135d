package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/internal/testsupport"
	"github.com/airlock-run/airlock/sandbox"
)

func TestPrintCheck(t *testing.T) {
	rep := checkReport{Report: sandbox.Report{
		Best: sandbox.Tier1, Why: "bubblewrap 0.8.0 with user namespaces and seccomp", OS: "linux",
		Bubblewrap: sandbox.BwrapReport{Path: "/usr/bin/bwrap", Version: "0.8.0", BindFD: true, DisableUserns: true, ClearEnv: true},
		UserNS:     sandbox.UserNSReport{Available: true, MaxUserNamespaces: 100},
		Seccomp:    sandbox.SeccompReport{Available: true, Actions: []string{"kill_process", "errno"}},
		Cgroup:     sandbox.CgroupReport{Version: 1, Root: "/sys/fs/cgroup", Controllers: []string{"memory", "cpu", "pids"}, Writable: true},
		Protected:  true,
		Findings:   []sandbox.Finding{{Severity: sandbox.SevWarn, Topic: "bubblewrap advisory", Text: "older than 0.12.0", Fix: "upgrade"}},
	}}
	rep.BoxStart.OK = true
	rep.BoxStart.Millis = 12.5
	var b bytes.Buffer
	printCheck(&b, rep)
	for _, want := range []string{
		"Sandbox tier: 1 (bubblewrap 0.8.0 with user namespaces and seccomp)",
		"Box start: ok",
		"Bubblewrap: /usr/bin/bwrap 0.8.0 (--ro-bind-fd yes, --disable-userns yes, --clearenv yes, setuid no)",
		"no AppArmor user-namespace restriction",
		"Cgroups: v1 at /sys/fs/cgroup, controllers memory cpu pids, writable yes",
		"Protected paths: on",
		"gVisor: not found (tier 2 unavailable)",
		"KVM: absent",
		"[warn] bubblewrap advisory: older than 0.12.0\n        fix: upgrade",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("sandbox check output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestSandboxCheckBoxFailure: when every file says tier 1 but a box does not
// start, the check says so, reports tier 0 and exits 125.
func TestSandboxCheckBoxFailure(t *testing.T) {
	if sandbox.Probe().Tier() < sandbox.Tier1 {
		testsupport.Missing(t, "the host probe gives no tier 1 here")
	}
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Exe: "/nonexistent/airlock"}
	code := Main(context.Background(), []string{"sandbox", "check", "--json"}, env)
	if code != 125 {
		t.Errorf("exit %d, want 125 (stderr %q)", code, errb.String())
	}
	var rep checkReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out.String())
	}
	if rep.BoxStart.OK || rep.BoxStart.Error == "" || rep.Best != sandbox.Tier0 || rep.Protected {
		t.Errorf("got box_start %+v, tier %d, protected %v; want a failed start, tier 0, protected off", rep.BoxStart, rep.Best, rep.Protected)
	}
}

// TestCheckListsCredentials: `sandbox check` lists each phantom secret,
// where it may go and how, and the model proxy's providers and budget,
// naming variables but never printing a value.
func TestCheckListsCredentials(t *testing.T) {
	dir := t.TempDir()
	const token, key = "ghp_CheckListingT0ken0123456789abcdefAB", "sk-proj-CheckListingKey0123456789"
	doc := `secrets:
  GITHUB_TOKEN: {hosts: [api.github.com, github.com], header: "Authorization: Bearer {}"}
  GIT_TOKEN: {hosts: [github.com], basic: "x-access-token:{}"}
  AWS_SECRET_ACCESS_KEY: {hosts: [s3.amazonaws.com], sigv4: AWS_ACCESS_KEY_ID}
models: {allow: ["gpt-5*"]}
limits: {model_tokens: 2M}
`
	if err := os.WriteFile(filepath.Join(dir, "airlock.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Dir: dir, Environ: []string{"HOME=" + t.TempDir(), "GITHUB_TOKEN=" + token, "OPENAI_API_KEY=" + key,
		"AIRLOCK_MODEL_BASE_URL=https://llm.internal:8443/v1"}}
	v := credentials(env, "")
	var b bytes.Buffer
	printCredentials(&b, v)
	js, _ := json.Marshal(v)
	out := b.String()
	t.Log(out)
	for _, want := range []string{
		"GITHUB_TOKEN: phantom, to api.github.com, github.com only, as header \"Authorization: Bearer {}\"",
		"GIT_TOKEN: not set here",
		"AWS_SECRET_ACCESS_KEY + AWS_ACCESS_KEY_ID: not set here (the box gets nothing), to s3.amazonaws.com only, as AWS SigV4",
		"providers openai (llm.internal:8443)",
		"2000000 tokens a run",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the listing lacks %q", want)
		}
	}
	if strings.Contains(out+string(js), token) || strings.Contains(out+string(js), key) {
		t.Fatal("the listing prints a value")
	}
}
