package files

import (
	"bytes"
	"encoding/hex"
	"io"
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

// TestGetToTakesBackDamagedBytes damages the last chunk of a blob bigger
// than the chunks GetTo streams in, so the bytes before it are written before
// the damage can be seen: into a file at its offset they must be taken back
// (the file cut off where it stood, the offset put back), and into a writer
// that cannot take bytes back nothing may be written at all. The same calls
// on the undamaged blob give the whole file.
func TestGetToTakesBackDamagedBytes(t *testing.T) {
	f := newFixture(t, Options{})
	sc := Scope{Tenant: "acme", Tree: "a"}
	data := bytes.Repeat([]byte("0123456789abcdef"), (3*hashChunk+hashChunk/2)/16)
	r := mustPut(t, f.s, sc, data)
	blob := f.s.blobPath("acme", r, false)
	good, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	bad[len(bad)-10] ^= 1
	const before = "bytes that were there: "
	for _, tc := range []struct {
		name   string
		open   func(t *testing.T) (io.Writer, func() []byte)
		offset bool // the writer is a file whose offset must come back
	}{
		{"a file at its offset", func(t *testing.T) (io.Writer, func() []byte) {
			return openWith(t, os.O_RDWR|os.O_CREATE|os.O_TRUNC, before)
		}, true},
		{"a file in append mode", func(t *testing.T) (io.Writer, func() []byte) {
			return openWith(t, os.O_RDWR|os.O_CREATE|os.O_APPEND, before)
		}, false},
		{"a pipe", func(t *testing.T) (io.Writer, func() []byte) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan []byte, 1)
			go func() { b, _ := io.ReadAll(pr); got <- append([]byte(before), b...) }()
			t.Cleanup(func() { pw.Close(); pr.Close() })
			return pw, func() []byte { pw.Close(); return <-got }
		}, false},
		{"a buffer", func(t *testing.T) (io.Writer, func() []byte) {
			b := bytes.NewBufferString(before)
			return b, b.Bytes
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(blob, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			w, contents := tc.open(t)
			n, err := f.s.GetTo(ctx, sc, r, w)
			if err == nil || !strings.Contains(err.Error(), "damaged") {
				t.Fatalf("GetTo of a damaged blob: %d, %v; want it reported damaged", n, err)
			}
			if fh, ok := w.(*os.File); ok && tc.offset {
				if off, _ := fh.Seek(0, io.SeekCurrent); off != int64(len(before)) {
					t.Errorf("offset after the failed get is %d, want %d", off, len(before))
				}
			}
			if got := contents(); string(got) != before {
				t.Errorf("the writer holds %d bytes after the failed get, want only the %d it had", len(got), len(before))
			}
			if err := os.WriteFile(blob, good, 0o600); err != nil {
				t.Fatal(err)
			}
			w, contents = tc.open(t)
			if n, err := f.s.GetTo(ctx, sc, r, w); err != nil || n != int64(len(data)) {
				t.Fatalf("GetTo of the sound blob: %d, %v", n, err)
			}
			if got := contents(); !bytes.Equal(got, append([]byte(before), data...)) {
				t.Errorf("the writer holds %d bytes, want what it had and the file's %d", len(got), len(data))
			}
		})
	}
}

// openWith opens a new file in a test directory with flags, writes prefix
// to it, and returns it with a function reading its whole content.
func openWith(t *testing.T, flags int, prefix string) (io.Writer, func() []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out")
	fh, err := os.OpenFile(p, flags, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	if _, err := fh.WriteString(prefix); err != nil {
		t.Fatal(err)
	}
	return fh, func() []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}
