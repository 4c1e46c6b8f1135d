package boxconf

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
)

// The walls of the exec step (FlagExecWall) cross in an encoding of their
// own, written and read by hand: the step runs at the start of every box
// without an init, before the command, and a reflective decoder's start
// (its type caches, every value boxed) is most of what the step would
// spend. The encoding is exact: one byte string for one Walls, every
// field in a fixed order, nothing optional but what a flag says is there.
//
//	magic    "airlock-walls 1\n"
//	string   Proto
//	string   Access
//	uvarint  flags (wallScope … wallListenTrace; no other bit)
//	list     Write                    when wallWrite
//	list     NoExec
//	list     Exec.Paths, Exec.Hide    when wallExec
//	string   Filter
//	list     Env
//	uvarint  Listen.FD, HTTPPort, SOCKSPort; string Exe, ConnectExe   when wallListen
//
// A string is its length (uvarint) and its bytes; a list its count
// (uvarint) and that many strings. Every uvarint is in its shortest form,
// no string but Filter holds a NUL (none is a path or an environment entry
// a kernel would take), and the encoding ends with the last field:
// anything else (a truncation, a byte left over, an unknown flag) is
// refused as a whole, so two encodings never read as one Walls.

// wallsMagic starts every encoding; its number is the encoding's version.
const wallsMagic = "airlock-walls 1\n"

// The flags word.
const (
	wallScope = 1 << iota
	wallSeccomp
	wallPtrace
	wallSetGID
	wallWrite       // Write is not nil (the write wall is on)
	wallExec        // Exec is not nil
	wallListen      // Listen is not nil
	wallListenTrace // Listen.Trace
	wallAll         = wallListenTrace<<1 - 1
)

// ErrWallsFormat is DecodeWalls' answer to bytes that are not walls of
// this encoding at all (another build's in-box code, another version).
var ErrWallsFormat = errors.New("not walls in this build's encoding")

// maxWallInt bounds the integers of the encoding (a descriptor, a port).
const maxWallInt = 1<<31 - 1

// EncodeWalls is w in the exec step's encoding.
func EncodeWalls(w *Walls) []byte {
	b := []byte(wallsMagic)
	b = appendString(b, w.Proto)
	b = appendString(b, w.Access)
	b = binary.AppendUvarint(b, wallFlags(w))
	if w.Write != nil {
		b = appendList(b, w.Write)
	}
	b = appendList(b, w.NoExec)
	if w.Exec != nil {
		b = appendList(b, w.Exec.Paths)
		b = appendList(b, w.Exec.Hide)
	}
	b = appendString(b, string(w.Filter))
	b = appendList(b, w.Env)
	if l := w.Listen; l != nil {
		for _, n := range []int{l.FD, l.HTTPPort, l.SOCKSPort} {
			b = binary.AppendUvarint(b, uint64(n))
		}
		b = appendString(b, l.Exe)
		b = appendString(b, l.ConnectExe)
	}
	return b
}

func wallFlags(w *Walls) uint64 {
	var f uint64
	for _, s := range []struct {
		on   bool
		flag uint64
	}{
		{w.Scope, wallScope}, {w.Seccomp, wallSeccomp}, {w.Ptrace, wallPtrace}, {w.SetGID, wallSetGID},
		{w.Write != nil, wallWrite}, {w.Exec != nil, wallExec}, {w.Listen != nil, wallListen},
		{w.Listen != nil && w.Listen.Trace, wallListenTrace},
	} {
		if s.on {
			f |= s.flag
		}
	}
	return f
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendList(b []byte, l []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(l)))
	for _, s := range l {
		b = appendString(b, s)
	}
	return b
}

// DecodeWalls reads one encoding of Walls, all of data. Bytes that do not
// start as this encoding does are ErrWallsFormat; any other fault names
// the byte where it lies.
func DecodeWalls(data []byte) (Walls, error) {
	var w Walls
	rest, ok := strings.CutPrefix(string(data), wallsMagic)
	if !ok {
		return w, ErrWallsFormat
	}
	d := wallDecoder{data: rest, at: len(wallsMagic)}
	w.Proto = d.text()
	w.Access = d.text()
	flags := d.uint(wallAll)
	w.Scope, w.Seccomp, w.Ptrace, w.SetGID = flags&wallScope != 0, flags&wallSeccomp != 0, flags&wallPtrace != 0, flags&wallSetGID != 0
	if flags&wallWrite != 0 {
		w.Write = d.list()
		if w.Write == nil {
			w.Write = []string{}
		}
	}
	w.NoExec = d.list()
	if flags&wallExec != 0 {
		w.Exec = &Exec{Paths: d.list(), Hide: d.list()}
	}
	if f := d.bytes(); f != "" {
		w.Filter = []byte(f)
	}
	w.Env = d.list()
	if flags&wallListen != 0 {
		l := &Listen{FD: d.int(), HTTPPort: d.int(), SOCKSPort: d.int(), Trace: flags&wallListenTrace != 0}
		l.Exe, l.ConnectExe = d.text(), d.text()
		w.Listen = l
	} else if flags&wallListenTrace != 0 {
		d.fail("a listen trace without listeners")
	}
	if d.err == nil && len(d.data) > 0 {
		d.fail(strconv.Itoa(len(d.data)) + " bytes after the last field")
	}
	if d.err != nil {
		return Walls{}, d.err
	}
	return w, nil
}

// wallDecoder reads the encoding's fields from data; the first fault is
// kept in err, and every read after it yields nothing.
type wallDecoder struct {
	data string
	at   int // the offset of data in the whole encoding
	err  error
}

func (d *wallDecoder) fail(why string) {
	if d.err == nil {
		d.err = errors.New("walls: byte " + strconv.Itoa(d.at) + ": " + why)
	}
	d.data = ""
}

func (d *wallDecoder) take(n int) string {
	s := d.data[:n]
	d.data, d.at = d.data[n:], d.at+n
	return s
}

// uint reads a uvarint in its shortest form, at most max.
func (d *wallDecoder) uint(max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < len(d.data) && i < binary.MaxVarintLen64; i++ {
		c := d.data[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break // beyond 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c >= 0x80 {
			continue
		}
		switch {
		case i > 0 && c == 0:
			d.fail("number not in its shortest form")
		case v > max:
			d.fail("number " + strconv.FormatUint(v, 10) + " out of range")
		default:
			d.take(i + 1)
			return v
		}
		return 0
	}
	d.fail("truncated or overlong number")
	return 0
}

func (d *wallDecoder) int() int { return int(d.uint(maxWallInt)) }

// bytes reads a string that may hold any byte.
func (d *wallDecoder) bytes() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	return d.take(n)
}

// count reads a length or a count: each thing counted takes a byte at
// least, so one beyond what is left is refused before anything is made
// for it.
func (d *wallDecoder) count() int {
	n := d.uint(maxWallInt)
	if d.err == nil && n > uint64(len(d.data)) {
		d.fail("length " + strconv.FormatUint(n, 10) + " past the end")
	}
	return int(n)
}

// text reads a string that holds no NUL.
func (d *wallDecoder) text() string {
	at := d.at
	s := d.bytes()
	if strings.IndexByte(s, 0) >= 0 {
		d.at = at
		d.fail("NUL in a string")
		return ""
	}
	return s
}

// list reads a list of strings; an empty one is nil.
func (d *wallDecoder) list() []string {
	n := d.count()
	if n == 0 || d.err != nil {
		return nil
	}
	l := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		l = append(l, d.text())
	}
	if d.err != nil {
		return nil
	}
	return l
}
