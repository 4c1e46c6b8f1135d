package files

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// rewindable returns w as a regular file that GetTo can cut back to where it
// stood, and that offset: a file open for writing at its offset (not in
// append mode, where every write lands at whatever the end is then). Any
// other writer (a pipe, a terminal, a buffer) is not: what is written to it
// cannot be taken back.
func rewindable(w io.Writer) (*os.File, int64, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return nil, 0, false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, 0, false
	}
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_APPEND != 0 {
		return nil, 0, false
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0, false
	}
	return f, off, true
}

// streamChunks is how many chunks of hashChunk bytes one streamed get has in
// flight: one being read, one hashed, one written, one spare.
const streamChunks = 4

// chunkSets holds the buffers of streamed gets, reused across calls.
var chunkSets = sync.Pool{New: func() any {
	s := make([][]byte, streamChunks)
	for k := range s {
		s[k] = make([]byte, hashChunk)
	}
	return &s
}}

// chunk is one piece of a streamed blob on its way from the reader through
// the hasher to the writer; err ends the stream after buf.
type chunk struct {
	buf []byte
	err error
}

// streamBlob copies the clear blob of r (size bytes, per its row) into out
// at its offset start, hashing the bytes on their way, and checks the count
// and the digest at the end. Reading, hashing and writing overlap, chunk by
// chunk, so a get costs little more than the slowest of the three. The digest
// is of exactly the bytes written: each chunk is hashed and written from the
// same buffer, which nothing else writes meanwhile. When anything fails
// (damage found at the end, a read or write error) out is cut back to start
// and its offset put back there, and the error is returned: the bytes that
// went through out before are gone from it.
func (s *Store) streamBlob(tenant string, r Ref, size int64, out *os.File, start int64) (int64, error) {
	path := s.blobPath(tenant, r, false)
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, damaged(r, "its blob is missing")
	}
	if err != nil {
		return 0, diskErr(err, "open %s", path)
	}
	defer fh.Close()
	set := chunkSets.Get().(*[][]byte)
	defer chunkSets.Put(set)
	n, sum, rerr, werr := pump(fh, &flushing{f: out, off: start}, *set, size+1)
	switch {
	case werr != nil:
		err = diskErr(werr, "write %s", r)
	case rerr != nil:
		err = diskErr(rerr, "read %s", path)
	case n != size:
		err = damaged(r, fmt.Sprintf("its blob is %d bytes, want %d", n, size))
	case sum != r.sum:
		err = damaged(r, "its bytes do not match the digest")
	}
	if err != nil {
		// Take back what was written: a caller that does not check the
		// error still finds no bytes of a damaged file where it asked.
		if terr := out.Truncate(start); terr != nil {
			return 0, diskErr(terr, "cut back %s after a failed read of %s (remove it: its bytes are not %s)", out.Name(), r, r)
		}
		out.Seek(start, io.SeekStart)
		return 0, err
	}
	return n, nil
}

// pump reads at most limit bytes of src into the buffers of set in turn,
// hashes each in a second goroutine and writes it to dst in a third, and
// returns the bytes written, their digest, and the first read and write
// errors. A write error stops the reading; everything read is still hashed
// so the goroutines end.
func pump(src io.Reader, dst io.Writer, set [][]byte, limit int64) (n int64, sum [sha256.Size]byte, rerr, werr error) {
	free := make(chan []byte, len(set))
	for _, b := range set {
		free <- b[:cap(b)]
	}
	toHash := make(chan chunk, len(set))
	toWrite := make(chan chunk, len(set))
	stop := make(chan struct{}) // closed when the writer fails
	go func() {
		defer close(toHash)
		var read int64
		for read < limit {
			var buf []byte
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			m, err := io.ReadFull(src, buf[:min(int64(len(buf)), limit-read)])
			read += int64(m)
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				toHash <- chunk{buf: buf[:m]}
				return
			}
			toHash <- chunk{buf: buf[:m], err: err}
			if err != nil {
				return
			}
		}
	}()
	h := sha256.New()
	go func() {
		defer close(toWrite)
		for c := range toHash {
			h.Write(c.buf)
			toWrite <- c
		}
	}()
	for c := range toWrite {
		if werr == nil && len(c.buf) > 0 {
			var m int
			m, werr = dst.Write(c.buf)
			n += int64(m)
			if werr != nil {
				close(stop)
			}
		}
		if c.err != nil && rerr == nil {
			rerr = c.err
		}
		free <- c.buf
	}
	h.Sum(sum[:0])
	return n, sum, rerr, werr
}

// flushing writes to a file and asks the kernel to start writing each chunk
// out to the disk as soon as it is written (sync_file_range, which does not
// wait): a caller that flushes the file after the get, as a durable copy
// does, then finds most of it on the disk already, the disk's work done
// while the later chunks were hashed.
type flushing struct {
	f   *os.File
	off int64
}

func (w *flushing) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if n > 0 {
		// Only a hint: an error here changes nothing about the bytes.
		writeBack(w.f, w.off, int64(n))
		w.off += int64(n)
	}
	return n, err
}
