package files

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/errs"
)

func TestTamperedBlobs(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	for _, sealed := range []bool{false, true} {
		opt := Options{}
		name := "clear"
		if sealed {
			opt.Keys = func(string) ([]byte, error) { return key, nil }
			name = "sealed"
		}
		for _, tc := range []struct {
			name   string
			change func(path string) error
		}{
			{"one byte flipped", func(p string) error {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				b[len(b)/2] ^= 1
				return os.WriteFile(p, b, 0o600)
			}},
			{"truncated", func(p string) error { return os.Truncate(p, 10) }},
			{"emptied", func(p string) error { return os.Truncate(p, 0) }},
			{"grown", func(p string) error {
				fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					return err
				}
				defer fh.Close()
				_, err = fh.Write([]byte("extra"))
				return err
			}},
			{"replaced by another file's blob", func(p string) error {
				return os.WriteFile(p, bytes.Repeat([]byte("z"), 4096), 0o600)
			}},
			{"removed", os.Remove},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, opt)
				sc := Scope{Tenant: "acme", Tree: "a"}
				data := bytes.Repeat([]byte("the original content "), 200)
				r := mustPut(t, f.s, sc, data)
				if err := tc.change(f.s.blobPath("acme", r, sealed)); err != nil {
					t.Fatal(err)
				}
				got, err := f.s.Get(ctx, sc, r)
				if err == nil {
					t.Fatalf("got %d bytes from a damaged blob, want an error", len(got))
				}
				if got != nil {
					t.Errorf("got bytes with the error, want none")
				}
				if c := errs.ClassOf(err); c == errs.NotFound {
					t.Errorf("got not found, want damage reported as damage: %v", err)
				}
				if !strings.Contains(err.Error(), "damaged") {
					t.Errorf("got %q, want it to say the file is damaged", err)
				}
				if n, probs, err := f.s.Verify(ctx); err != nil || n != 1 || len(probs) != 1 {
					t.Errorf("Verify: %d checked, %v, %v; want one problem", n, probs, err)
				}
				// Storing the same content again repairs it.
				mustPut(t, f.s, sc, data)
				if got, err := f.s.Get(ctx, sc, r); err != nil || !bytes.Equal(got, data) {
					t.Errorf("after storing again: %v; want the original bytes", err)
				}
			})
		}
	}
}

// TestSealedBlobBoundToItsName moves a sealed blob to another tenant's name
// for the same digest: it must not open there, though the key is the same.
func TestSealedBlobBoundToItsName(t *testing.T) {
	key := bytes.Repeat([]byte{9}, 32)
	f := newFixture(t, Options{Keys: func(string) ([]byte, error) { return key, nil }})
	data := []byte("same content, two tenants")
	r := mustPut(t, f.s, Scope{Tenant: "acme", Tree: "a"}, data)
	mustPut(t, f.s, Scope{Tenant: "globex", Tree: "a"}, data)
	forged, err := seal(key, "acme", r, []byte("forged content of the same length"[:len(data)]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.s.blobPath("globex", r, true), forged, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Get(ctx, Scope{Tenant: "globex", Tree: "a"}, r); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("got %v, want a blob sealed for another tenant refused as damaged", err)
	}
}

func TestEncryption(t *testing.T) {
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "tenant.key")
	key := bytes.Repeat([]byte{0x42}, 32)
	if err := os.WriteFile(keyPath, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	storeDir := filepath.Join(dir, "store")
	open := func(keys Keys) *Store {
		t.Helper()
		s, err := Open(storeDir, Options{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	sc := Scope{Tenant: "acme", Tree: "a"}
	secret := []byte("PLAINTEXT-MARKER the tenant's confidential result")
	s := open(KeyFile(keyPath))
	r := mustPut(t, s, sc, secret)

	t.Run("the blob on disk is not the plaintext", func(t *testing.T) {
		filepath.Walk(filepath.Join(storeDir, "blobs"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				b, _ := os.ReadFile(p)
				if bytes.Contains(b, []byte("PLAINTEXT-MARKER")) {
					t.Errorf("%s holds the plaintext", p)
				}
			}
			return nil
		})
		got, err := s.Get(ctx, sc, r)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("Get: %v", err)
		}
	})

	wrong := bytes.Repeat([]byte{0x43}, 32)
	for _, tc := range []struct {
		name string
		keys Keys
		want string
	}{
		{"no key configured", nil, "no key is configured"},
		{"a wrong key", func(string) ([]byte, error) { return wrong, nil }, "not the key its files were sealed with"},
		{"a key file that is missing", KeyFile(filepath.Join(dir, "absent.key")), "read the key file"},
		{"a key file that is not a key", KeyFile(storeDir + "/meta.db"), "not a 256-bit key"},
		{"a key variable that is not set", KeyEnv("AIRLOCK_TEST_KEY", func(string) string { return "" }), "AIRLOCK_TEST_KEY is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s2 := open(tc.keys)
			_, err := s2.Get(ctx, sc, r)
			if errs.ClassOf(err) != errs.Unavailable || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Get: got %v (%v), want unavailable saying %q", err, errs.ClassOf(err), tc.want)
			}
			_, err = s2.Put(ctx, sc, []byte("new file"))
			if errs.ClassOf(err) != errs.Unavailable || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Put: got %v, want unavailable saying %q (never a file kept in the clear)", err, tc.want)
			}
		})
	}

	t.Run("the key from a variable", func(t *testing.T) {
		env := map[string]string{"AIRLOCK_FILES_KEY": hex.EncodeToString(key)}
		s3 := open(KeyEnv("AIRLOCK_FILES_KEY", func(k string) string { return env[k] }))
		if got, err := s3.Get(ctx, sc, r); err != nil || !bytes.Equal(got, secret) {
			t.Errorf("Get: %v", err)
		}
	})

	t.Run("a tenant without a key stays in the clear", func(t *testing.T) {
		s4 := open(func(tenant string) ([]byte, error) {
			if tenant == "acme" {
				return key, nil
			}
			return nil, nil
		})
		other := Scope{Tenant: "smallco", Tree: "a"}
		r := mustPut(t, s4, other, []byte("clear"))
		if _, err := os.Stat(s4.blobPath("smallco", r, false)); err != nil {
			t.Errorf("the unsealed tenant's blob: %v", err)
		}
	})
}

func TestParseKey(t *testing.T) {
	k := bytes.Repeat([]byte{1}, 32)
	for _, tc := range []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"raw", k, true},
		{"hex", []byte(hex.EncodeToString(k) + "\n"), true},
		{"base64", []byte("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n"), true},
		{"short", k[:16], false},
		{"hex of 16 bytes", []byte(hex.EncodeToString(k[:16])), false},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseKey(tc.in)
			if tc.ok != (err == nil) || (tc.ok && !bytes.Equal(got, k)) {
				t.Errorf("got %x, %v; want ok=%v", got, err, tc.ok)
			}
		})
	}
}
