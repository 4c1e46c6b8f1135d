package egress

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestPhantomShape(t *testing.T) {
	for _, tc := range []struct{ name, value, prefix string }{
		{"classic github", "ghp_R3alT0kenValue0123456789abcdefABCD", "ghp_"},
		{"fine-grained github", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF", "github_pat_"},
		{"anthropic", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "sk-ant-"},
		{"slack", "xoxb-123456789012-123456789012-AbCdEfGhIjKlMnOp", "xoxb-"},
		{"no prefix", "AKIAIOSFODNN7EXAMPLEAKIAIOSFOD", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ph, err := Phantom(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if len(ph) != len(tc.value) || ph == tc.value || !strings.HasPrefix(ph, tc.prefix) {
				t.Fatalf("%q -> %q", tc.value, ph)
			}
			if prefixLen(tc.value) != len(tc.prefix) {
				t.Fatalf("prefix %d, want %d", prefixLen(tc.value), len(tc.prefix))
			}
			for i := range ph {
				a, b := tc.value[i], ph[i]
				if class(a) != class(b) {
					t.Fatalf("byte %d: %q became %q", i, a, b)
				}
			}
		})
	}
	for _, short := range []string{"", "ghp_", "ghp_abc", "hunter2hunter2"} {
		if _, err := Phantom(short); err == nil {
			t.Errorf("Phantom(%q) accepted a value too short to hide", short)
		}
	}
}

func class(c byte) byte {
	switch {
	case c >= 'a' && c <= 'z':
		return 'a'
	case c >= 'A' && c <= 'Z':
		return 'A'
	case c >= '0' && c <= '9':
		return '0'
	}
	return c
}

func TestMatchPath(t *testing.T) {
	for _, tc := range []struct {
		glob, path string
		want       bool
	}{
		{"/repos/acme/**", "/repos/acme", true},
		{"/repos/acme/**", "/repos/acme/x/y", true},
		{"/repos/acme/**", "/repos/acmex/y", false},
		{"/repos/*/issues", "/repos/a/issues", true},
		{"/repos/*/issues", "/repos/a/b/issues", false},
		{"/**/raw", "/a/b/raw", true},
		{"/", "/", true},
	} {
		if got := matchPath(tc.glob, tc.path); got != tc.want {
			t.Errorf("matchPath(%q, %q) = %v", tc.glob, tc.path, got)
		}
	}
}

func TestCleanPathRefusesAmbiguity(t *testing.T) {
	for _, p := range []string{"/a/../b", "/a/%2e%2e/b", "/a%2fb", "/a%5Cb", "/a\\b", "//a", "/a/./b", "/a%zz", "/a%00"} {
		if _, err := cleanPath(p); err == nil {
			t.Errorf("cleanPath(%q) accepted", p)
		}
	}
	if got, err := cleanPath("/repos/acme/w%20x/"); err != nil || got != "/repos/acme/w x/" {
		t.Errorf("cleanPath = %q, %v", got, err)
	}
}

// TestScanAcrossReads: a placeholder split across reads is still found.
func TestScanAcrossReads(t *testing.T) {
	secrets := []Secret{{Name: "T", Placeholder: "ph_0123456789abcdef"}}
	body := "x" + secrets[0].Placeholder + "y"
	sr := newScanReader(&oneByte{r: strings.NewReader(body)}, secrets)
	if _, err := io.ReadAll(sr); err == nil {
		t.Fatal("a placeholder split across one-byte reads passed")
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(b []byte) (int, error) { return o.r.Read(b[:1]) }

// TestUnbindAcrossReads: an echoed value split across reads comes out as
// the placeholder, at the same length.
func TestUnbindAcrossReads(t *testing.T) {
	s := Secret{Name: "T", Value: "ghp_REALVALUE0123456789", Placeholder: "ghp_PHANTOM0123456789ab"}
	in := "a" + s.Value + "b" + s.Value
	out, _ := io.ReadAll(newUnbindReader(&oneByte{r: strings.NewReader(in)}, []Secret{s}))
	if bytes.Contains(out, []byte(s.Value)) || len(out) != len(in) {
		t.Fatalf("got %q", out)
	}
}

// FuzzBindSecrets: whatever request head the box sends, the real value is
// written only toward a bound host, and only when the request is let
// through.
func FuzzBindSecrets(f *testing.F) {
	ph := "ghp_PHANTOM0123456789abcdefABCDEFGH"
	val := "ghp_REALVAL0123456789abcdefABCDEFGH"
	b64 := base64.StdEncoding.EncodeToString([]byte("x:" + ph))
	f.Add("api.test", "/p", "k="+ph, "Bearer "+ph, "Basic "+b64)
	f.Add("other.test", "/p", "", "Bearer "+ph, "")
	f.Add("api.test", "/"+ph, "", "", "")
	f.Fuzz(func(t *testing.T, host, path, query, auth, extra string) {
		secrets := []Secret{{Name: "T", Value: val, Placeholder: ph, Hosts: []string{"api.test"}, Header: "Authorization", Basic: true, Query: "k"}}
		hdr := http.Header{"Authorization": {auth}, "X-Extra": {extra}}
		q, used, l := bindSecrets(secrets, host, true, path, query, hdr)
		all := q + path
		for _, vs := range hdr {
			for _, v := range vs {
				all += v
				if d, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(v, "Basic ")); err == nil {
					all += string(d)
				}
			}
		}
		if l != nil {
			return
		}
		if host != "api.test" && strings.Contains(all, val) && !strings.Contains(path+query+auth+extra, val) {
			t.Fatalf("the value was written toward %q", host)
		}
		if strings.Contains(all, val) && len(used) == 0 && !strings.Contains(path+query+auth+extra, val) {
			t.Fatal("the value was written without being recorded")
		}
	})
}
