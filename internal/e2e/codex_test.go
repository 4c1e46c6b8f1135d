package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/internal/testsupport"
)

// codexBin finds the Codex CLI's native binary that scripts/setup.sh
// installs from the npm registry (@openai/codex): $AIRLOCK_CODEX, or the
// one under .airlock-ci/npm. Missing, the test fails under CI=true.
func codexBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("AIRLOCK_CODEX")
	if bin == "" {
		npm := os.Getenv("AIRLOCK_NPM_DIR")
		if npm == "" {
			npm, _ = filepath.Abs("../../.airlock-ci/npm")
		}
		bin = filepath.Join(npm, "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
	}
	real, err := filepath.EvalSymlinks(bin)
	if err == nil {
		err = exec.Command(real, "--version").Run()
	}
	if err != nil {
		testsupport.Missing(t, "the Codex CLI is not installed at %s (run bash scripts/setup.sh): %v", bin, err)
	}
	return real
}

// codexProvider is a model provider on loopback TLS speaking the OpenAI
// Responses API, streamed, as Codex calls it. Its script: answer with a
// call of Codex's shell tool (exec_command) running the allowed command,
// then with one running the refused command, then with a final message;
// which answer a request gets is read from the tool outputs it carries, so
// extra requests Codex makes do not shift the script.
type codexProvider struct {
	port    int
	rootPEM []byte

	mu       sync.Mutex
	auth     []string          // the Authorization header of each request
	outputs  map[string]string // call_id → function_call_output seen
	requests int
}

const (
	allowedCmd = `echo ALLOWED-$((6*7)); env | sort > box-env.txt; cat box-env.txt; cat /proc/self/environ | tr '\0' '\n' | grep -c . `
	refusedCmd = `uname -a; echo "exit=$?"`
)

func startCodexProvider(t *testing.T) *codexProvider {
	t.Helper()
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rt := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "codex test root"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	rootDER, _ := x509.CreateCertificate(rand.Reader, rt, rt, &rootKey.PublicKey, rootKey)
	rootCert, _ := x509.ParseCertificate(rootDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, _ := x509.CreateCertificate(rand.Reader, leaf, rootCert, &key.PublicKey, rootKey)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	p := &codexProvider{port: ln.Addr().(*net.TCPAddr).Port, outputs: map[string]string{},
		rootPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER})}
	srv := &http.Server{Handler: p}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return p
}

func (p *codexProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.auth = append(p.auth, r.Header.Get("Authorization"))
	p.requests++
	p.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not a Responses API request", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	for _, it := range req.Input {
		if it.Type == "function_call_output" {
			var s string
			if json.Unmarshal(it.Output, &s) != nil {
				s = string(it.Output)
			}
			p.outputs[it.CallID] = s
		}
	}
	_, ran1 := p.outputs["call_1"]
	_, ran2 := p.outputs["call_2"]
	p.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	n := 0
	event := func(typ string, v map[string]any) {
		v["type"] = typ
		v["sequence_number"] = n
		n++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		w.(http.Flusher).Flush()
	}
	id := fmt.Sprintf("resp_%d", time.Now().UnixNano())
	event("response.created", map[string]any{"response": map[string]any{"id": id, "status": "in_progress"}})
	var item map[string]any
	switch {
	case !ran1:
		item = map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command",
			"arguments": mustJSON(map[string]any{"cmd": allowedCmd})}
	case !ran2:
		item = map[string]any{"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "exec_command",
			"arguments": mustJSON(map[string]any{"cmd": refusedCmd})}
	default:
		item = map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "ALL-DONE", "annotations": []any{}}}}
	}
	event("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response.completed", map[string]any{"response": map[string]any{"id": id, "status": "completed",
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestCodexThroughModelProxy runs OpenAI's Codex CLI (codex exec) inside
// `airlock run`, a tier-1 box with the exec wall, against a fake provider
// reached only through the model proxy, with no key in the box. Codex runs
// the two shell commands the provider asks for itself, in the box: the
// allowed one runs and its output (the box's environment) reaches the
// provider in the next request; the refused one (uname, outside
// shell.allow) is refused by the kernel and comes back to the agent as
// Permission denied. The provider sees the real key on every request; the
// box's environment, /proc and the files it wrote never hold it, nor does
// anything airlock keeps.
func TestCodexThroughModelProxy(t *testing.T) {
	requireBwrap(t)
	requireLandlock(t)
	codex := codexBin(t)
	prov := startCodexProvider(t)
	const key = "sk-proj-CodexHostOnlyKey0123456789abcdefABCDEF"
	h := newHome(t)
	roots := filepath.Join(h.State, "provider-root.pem")
	if err := os.WriteFile(roots, prov.rootPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	h.write("airlock.yaml", fmt.Sprintf(`
fs: {read: [".", %q], write: ["."]}
shell: {allow: [sh, bash, env, sort, cat, tr, grep, echo, %q]}
net: {allow: ["127.0.0.1:%d"]}
env: {allow: [OPENAI_API_KEY]}
models: {allow: ["gpt-5*"]}
limits: {wall: 120s}
`, filepath.Dir(filepath.Dir(codex)), codex, prov.port))
	// The old shape, without the model proxy: env.allow puts the key
	// itself in the box, for any program there to read and send.
	h0 := newHome(t)
	h0.write("airlock.yaml", "shell: {allow: [env]}\nenv: {allow: [OPENAI_API_KEY]}\n")
	if r := h0.runEnv(append(append([]string(nil), h0.environ...), "OPENAI_API_KEY="+key), "run", "--", "env"); !strings.Contains(r.Stdout, key) {
		t.Fatalf("old shape: want the key in the box's environment; got exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	// airlock's own environment holds the key and the operator's endpoint;
	// SSL_CERT_FILE makes the test root airlock's only upstream root, as
	// the system's roots are for a real provider.
	environ := append(append([]string(nil), h.environ...), "OPENAI_API_KEY="+key,
		fmt.Sprintf("AIRLOCK_MODEL_BASE_URL=https://127.0.0.1:%d/v1", prov.port), "SSL_CERT_FILE="+roots)
	script := codex + ` exec --skip-git-repo-check --ephemeral --color never \
  -s danger-full-access -c approval_policy='"never"' -c web_search='"disabled"' -m gpt-5-codex \
  -c model_provider='"airlock"' -c model_providers.airlock.name='"airlock"' \
  -c model_providers.airlock.base_url="\"$OPENAI_BASE_URL\"" -c model_providers.airlock.wire_api='"responses"' \
  "run the commands you are given" </dev/null`
	r := h.runEnv(environ, "run", "--mode", "fix", "--", "sh", "-c", script)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)

	prov.mu.Lock()
	out1, out2, auth, n := prov.outputs["call_1"], prov.outputs["call_2"], prov.auth, prov.requests
	prov.mu.Unlock()
	if r.Code != 0 || !strings.Contains(r.Stdout, "ALL-DONE") {
		t.Fatalf("codex did not finish its turn (exit %d, %d provider requests)", r.Code, n)
	}
	if !strings.Contains(out1, "ALLOWED-42") || !strings.Contains(out1, "OPENAI_BASE_URL=http://127.0.0.1:") {
		t.Fatalf("the allowed command's output did not reach the provider: %q", out1)
	}
	if !strings.Contains(out2, "Permission denied") || strings.Contains(out2, "Linux ") {
		t.Fatalf("the refused command did not come back as a refusal: %q", out2)
	}
	for i, a := range auth {
		if a != "Bearer "+key {
			t.Fatalf("provider request %d carried Authorization %q, want the real key", i, a)
		}
	}
	if strings.Contains(out1+out2+r.Stdout+r.Stderr, key) || strings.Contains(out1, "OPENAI_API_KEY="+key[:8]) {
		t.Fatal("the real key reached the box")
	}
	// Nothing the box wrote, nor anything airlock keeps, holds the key.
	wrote := false
	filepath.Walk(filepath.Dir(h.Work), func(path string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), key) {
			t.Errorf("%s holds the real key", path)
		}
		if filepath.Base(path) == "box-env.txt" {
			wrote = strings.Contains(string(b), "OPENAI_BASE_URL=")
		}
		return nil
	})
	if !wrote {
		t.Fatal("the allowed command's file (box-env.txt) was not written in the working directory")
	}
	// The audit log records each model request with the usage its answer
	// reported.
	b, _ := os.ReadFile(filepath.Join(h.State, "state", "airlock", "audit.jsonl"))
	if c := strings.Count(string(b), `"input_tokens":100`); c < 3 {
		t.Fatalf("the audit log records usage of %d model answers, want 3 at least", c)
	}
}
