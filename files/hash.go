package files

import (
	"crypto/sha256"
	"errors"
	"io"
)

// hashChunk is the unit the hashing pipelines below pass between the
// goroutine that reads and the one that hashes: reading the next chunk
// overlaps hashing the last one, so on two cores a read and its check cost
// little more than the read.
const hashChunk = 1 << 20

// readAllHashing fills buf from r until r ends or buf is full, hashing what
// it read on the way. It returns how many bytes it read and their digest.
func readAllHashing(r io.Reader, buf []byte) (int, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h := sha256.New()
	ch := make(chan []byte, 4)
	done := make(chan struct{})
	go func() {
		for b := range ch {
			h.Write(b)
		}
		close(done)
	}()
	n := 0
	var err error
	for n < len(buf) {
		end := min(n+hashChunk, len(buf))
		var m int
		m, err = io.ReadFull(r, buf[n:end])
		if m > 0 {
			ch <- buf[n : n+m]
		}
		n += m
		if err != nil {
			break
		}
	}
	close(ch)
	<-done
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	h.Sum(sum[:0])
	return n, sum, err
}
