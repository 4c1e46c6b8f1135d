package httpfront

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const good = "0123456789abcdef0123456789abcdef"

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(write("target", good, 0o600), link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want, wantErr string
	}{
		{"mode 600 with a newline", write("ok", good+"\n", 0o600), good, ""},
		{"mode 400", write("ro", good, 0o400), good, ""},
		{"world readable", write("world", good, 0o644), "", "chmod 600"},
		{"group readable", write("group", good, 0o640), "", "chmod 600"},
		{"group writable", write("gw", good, 0o620), "", "chmod 600"},
		{"a symbolic link", link, "", "symbolic link"},
		{"a FIFO (never blocks)", fifo, "", "not a regular file"},
		{"a directory", sub, "", "not a regular file"},
		{"too short", write("short", "abc", 0o600), "", "shorter than 32"},
		{"two words", write("two", good+" "+good, 0o600), "", "spaces"},
		{"empty", write("empty", "", 0o600), "", "shorter"},
		{"missing", filepath.Join(dir, "none"), "", "--token-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadTokenFile(tt.path)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || got != "" {
				t.Errorf("got %q, %v; want an error with %q", got, err, tt.wantErr)
			}
		})
	}
}

func TestNewToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if raw, err := hex.DecodeString(a); err != nil || len(raw) != TokenBytes || a == b {
		t.Errorf("got %q and %q; want two different hex strings of %d bytes", a, b, TokenBytes)
	}
}

func TestPeekID(t *testing.T) {
	tests := []struct{ name, prefix, want string }{
		{"id first", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"xxx`, "7"},
		{"id after params", `{"jsonrpc":"2.0","method":"m","params":{"a":[1,{"b":2}]},"id":"s"`, `"s"`},
		{"id cut off", `{"jsonrpc":"2.0","method":"m","params":{"a":"xxxx`, ""},
		{"an object id is no id", `{"id":{"x":1}}`, ""},
		{"a batch", `[{"id":1}`, ""},
		{"id nested only", `{"params":{"id":3},"x":"yyy`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(peekID([]byte(tt.prefix))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// sdkBackend is the SDK's own handler as a backend.
type sdkBackend struct{ *sdk.StreamableHTTPHandler }

func (b sdkBackend) Begin(w http.ResponseWriter, r *http.Request, _ string) bool {
	b.ServeHTTP(w, r)
	return false
}
func (sdkBackend) End(string) {}

// TestNoTokenConfigured: a front with no token that was not told NoAuth
// refuses everything (fail closed), whatever the client sends.
func TestNoTokenConfigured(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "s", Version: "1"}, nil)
	f := New(t.Context(), Options{}, sdkBackend{sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)})
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		r.Host = "127.0.0.1:1"
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		f.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized || f.Sessions() != 0 || w.Header().Get(SessionHeader) != "" {
			t.Errorf("Authorization %q: got %d with %d sessions, want 401 and none", auth, w.Code, f.Sessions())
		}
	}
}

// TestClientHeaderIsOurs: the client header the backend reads is the
// remote address, never what the client sent.
func TestClientHeaderIsOurs(t *testing.T) {
	var seen []string
	b := recordBackend(func(r *http.Request) { seen = append(seen, r.Header.Values(ClientHeader)...) })
	f := New(t.Context(), Options{NoAuth: true, Sessionless: true}, b)
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	r.Host, r.RemoteAddr = "127.0.0.1:1", "127.0.0.9:5555"
	r.Header.Add(ClientHeader, "someone-else")
	f.ServeHTTP(httptest.NewRecorder(), r)
	if len(seen) != 1 || seen[0] != "127.0.0.9" {
		t.Errorf("the backend saw client %q, want [127.0.0.9]", seen)
	}
}

type recordBackend func(*http.Request)

func (b recordBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) { b(r) }
func (b recordBackend) Begin(w http.ResponseWriter, r *http.Request, _ string) bool {
	b(r)
	return false
}
func (recordBackend) End(string) {}
