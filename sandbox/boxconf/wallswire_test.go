package boxconf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sampleWalls are walls of every shape the host plans.
func sampleWalls() map[string]*Walls {
	env := []string{"PATH=/usr/bin:/bin", "HOME=/home/airlock", "MULTI=line one\nline two", "EMPTY="}
	return map[string]*Walls{
		"none":             {Proto: Fingerprint(), Access: "0 0"},
		"write wall":       {Proto: Fingerprint(), Access: "7ff2 3", Write: []string{"/tmp", "/var/tmp", "/dev", "/proc", "/home/airlock"}, Scope: true, Env: env},
		"empty write wall": {Proto: Fingerprint(), Access: "7ff2 0", Write: []string{}},
		"exec wall sealed": {Proto: Fingerprint(), Access: "7fff 3", Write: []string{"/tmp"}, NoExec: []string{"/tmp", "/dev"},
			Exec:    &Exec{Paths: []string{"/usr/bin/git", "/usr/lib"}, Hide: []string{"/usr/bin", "/bin"}},
			Seccomp: true, Ptrace: true, SetGID: true, Filter: []byte{0x20, 0, 0, 0, 4, 0, 0, 0, 0x15, 0, 1, 0}, Env: env},
		"exec wall, nothing listed": {Proto: Fingerprint(), Access: "1 0", Exec: &Exec{}},
		"network": {Proto: Fingerprint(), Access: "7ff2 3", Write: []string{"/tmp"}, Scope: true, Env: env,
			Listen: &Listen{FD: 7, HTTPPort: 3128, SOCKSPort: 1080, Exe: "/run/airlock/airlock", ConnectExe: "/run/airlock/bin/airlock-connect"}},
		"network traced": {Proto: Fingerprint(), Access: "7ff2 3", Write: []string{"/tmp"},
			Listen: &Listen{FD: 1<<31 - 1, HTTPPort: 65535, SOCKSPort: 0, Exe: "/x", Trace: true}},
	}
}

// normal is w as decoding makes it: empty lists but Write are nil.
func normal(w Walls) Walls {
	nilIfEmpty := func(l []string) []string {
		if len(l) == 0 {
			return nil
		}
		return l
	}
	w.NoExec, w.Env = nilIfEmpty(w.NoExec), nilIfEmpty(w.Env)
	if len(w.Filter) == 0 {
		w.Filter = nil
	}
	if w.Exec != nil {
		w.Exec = &Exec{Paths: nilIfEmpty(w.Exec.Paths), Hide: nilIfEmpty(w.Exec.Hide)}
	}
	return w
}

// TestWallsRoundTrip: every shape reads back as it was written, and its
// encoding is the only one of it (encoding what was read gives the same
// bytes).
func TestWallsRoundTrip(t *testing.T) {
	for name, w := range sampleWalls() {
		t.Run(name, func(t *testing.T) {
			b := EncodeWalls(w)
			got, err := DecodeWalls(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if want := normal(*w); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			if (got.Write == nil) != (w.Write == nil) {
				t.Fatalf("the write wall is %v after the round trip, was %v", got.Write != nil, w.Write != nil)
			}
			if again := EncodeWalls(&got); !bytes.Equal(again, b) {
				t.Fatalf("encoding what was read differs:\n%q\n%q", again, b)
			}
		})
	}
}

// TestWallsRefused: every encoding that is not exactly one of Walls is
// refused whole; bytes of another encoding (the JSON of before) are
// ErrWallsFormat.
func TestWallsRefused(t *testing.T) {
	good := EncodeWalls(sampleWalls()["network"])
	head := []byte(wallsMagic)
	str := func(s string) []byte { return appendString(nil, s) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	uv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	empty := cat(head, str("p"), str("a"), uv(0), uv(0), str(""), uv(0)) // a valid base
	if _, err := DecodeWalls(empty); err != nil {
		t.Fatalf("the base of the cases is refused: %v", err)
	}
	jsonWalls, _ := json.Marshal(sampleWalls()["network"])
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"nothing", nil, ErrWallsFormat.Error()},
		{"the JSON of before", jsonWalls, ErrWallsFormat.Error()},
		{"another version", append([]byte("airlock-walls 2\n"), good[len(head):]...), ErrWallsFormat.Error()},
		{"a byte left over", append(append([]byte(nil), good...), 0), "bytes after the last field"},
		{"unknown flag", cat(head, str("p"), str("a"), uv(256), uv(0), str(""), uv(0)), "out of range"},
		{"trace without listeners", cat(head, str("p"), str("a"), uv(wallListenTrace), uv(0), str(""), uv(0)), "listen trace without listeners"},
		{"number not shortest", cat(head, str("p"), str("a"), []byte{0x80, 0x00}, uv(0), str(""), uv(0)), "shortest form"},
		{"number past 64 bits", cat(head, str("p"), str("a"), bytes.Repeat([]byte{0xff}, 10), []byte{1}), "overlong"},
		{"string past the end", cat(head, uv(99), []byte("p")), "past the end"},
		{"count past the end", cat(head, str("p"), str("a"), uv(0), uv(3), str("x")), "past the end"},
		{"count out of range", cat(head, str("p"), str("a"), uv(0), uv(1<<40)), "out of range"},
		{"NUL in a path", cat(head, str("p"), str("a"), uv(0), uv(1), str("/tmp\x00/x"), str(""), uv(0)), "NUL"},
		{"NUL in an entry", cat(head, str("p"), str("a"), uv(0), uv(0), str(""), uv(1), str("A=\x00")), "NUL"},
		{"descriptor out of range", cat(head, str("p"), str("a"), uv(wallListen), uv(0), str(""), uv(0), uv(1<<31)), "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := DecodeWalls(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %+v, %v; want a refusal saying %q", w, err, tc.want)
			}
			if !reflect.DeepEqual(w, Walls{}) {
				t.Fatalf("a refusal returned walls: %+v", w)
			}
		})
	}
	// Cut anywhere, the encoding is refused: no prefix of it is walls.
	for n := range good {
		if _, err := DecodeWalls(good[:n]); err == nil {
			t.Fatalf("the first %d of %d bytes read as walls", n, len(good))
		}
	}
}

// TestWallsOneReading: JSON, as the exec step read its walls before, takes
// one document in many spellings, and one of them reads as no write wall
// at all: a key given twice counts its last value, a key in other case is
// the same key, and a field it does not know is dropped. The encoding
// has one spelling for one Walls: any byte changed in it is refused or
// reads as other walls, never as the same.
func TestWallsOneReading(t *testing.T) {
	var old Walls
	if err := json.Unmarshal([]byte(`{"write":["/tmp"],"WRITE":null,"wall":"x","proto":"p"}`), &old); err != nil || old.Write != nil {
		t.Fatalf("the JSON reading kept the write wall (%v, %v); the case no longer shows what it did", old.Write, err)
	}
	w := sampleWalls()["exec wall sealed"]
	good := EncodeWalls(w)
	want, _ := DecodeWalls(good)
	for i := range good {
		for _, flip := range []byte{0x01, 0x80} {
			b := append([]byte(nil), good...)
			b[i] ^= flip
			if got, err := DecodeWalls(b); err == nil && reflect.DeepEqual(got, want) {
				t.Fatalf("byte %d changed (^%#x) reads as the same walls", i, flip)
			}
		}
	}
}

// FuzzDecodeWalls: no input panics, and what is accepted encodes back to
// exactly the bytes read.
func FuzzDecodeWalls(f *testing.F) {
	for _, w := range sampleWalls() {
		f.Add(EncodeWalls(w))
	}
	f.Add([]byte(wallsMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := DecodeWalls(data)
		if err != nil {
			if !errors.Is(err, ErrWallsFormat) && !strings.HasPrefix(err.Error(), "walls: byte ") {
				t.Fatalf("a refusal that names no place: %v", err)
			}
			return
		}
		if again := EncodeWalls(&w); !bytes.Equal(again, data) {
			t.Fatalf("accepted %q, which encodes back as %q", data, again)
		}
	})
}

// TestWallsEveryField: walls with every field set (fill) read back as
// they were written, so a field added to Walls and not to the encoding
// fails here instead of never reaching the box (a wall the host plans and
// reports, and the box never puts up).
func TestWallsEveryField(t *testing.T) {
	w := &Walls{}
	fill(reflect.ValueOf(w).Elem(), new(int))
	got, err := DecodeWalls(EncodeWalls(w))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !reflect.DeepEqual(got, *w) {
		t.Fatalf("a field does not cross: wrote %+v, read %+v", *w, got)
	}
}
