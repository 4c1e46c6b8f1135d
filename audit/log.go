package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/internal/starttrace"
)

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Now is the clock for records whose Time is zero; nil means time.Now.
	Now func() time.Time
	// BoxWritable are the paths a box may write; nil means none. A log at
	// or beneath one of them is refused: the box could rewrite the
	// evidence or point the log at a file of the host's.
	BoxWritable []string
	// TailLater has Open return once the file is opened and checked, and
	// read and check its last record in the background, beside the
	// caller's own start: Ready reports the result, and every append
	// and Head waits for it first and fails with its error. False reads
	// it before Open returns.
	TailLater bool
	// Tails, when set, is the last line this opener's logs wrote or
	// checked (see TailCache); a log opened again for the same file with
	// the same cache takes its chain up from it without parsing. Nil
	// parses the last line at every open.
	Tails *TailCache
}

// Log is an open audit log. It is safe for concurrent use by goroutines,
// and several processes may append to the same file: every Append takes an
// exclusive flock on the file and picks the chain up from whatever record is
// last at that moment.
//
// Every Append is written with one write(2) on an O_APPEND descriptor and
// fsynced (dataSync) before it returns, so a record Append reported as
// written survives a crash of the machine. AppendDeferred writes at once and fsyncs in the
// background, for a caller that reports nothing before its next Append,
// Sync or Close (each of which waits for that fsync) returns.
type Log struct {
	mu    sync.Mutex
	f     *os.File
	path  string
	now   func() time.Time
	tails *TailCache
	// What this process believes the tail is. Checked against the file's
	// size under the lock: if another writer appended, the tail is re-read.
	size int64
	seq  int64
	head string
	// bg is the fsync AppendDeferred left running, nil when none; its
	// result is taken by the next Append, Sync or Close.
	bg chan error
	// pending is the last record AppendAsync was given, nil once it is
	// written (or failed); each one waits for the one before it, and
	// every other write waits for it, so records keep the order of the
	// calls. asyncErr is the first of them that failed, until Sync or
	// Close reports it.
	pending  *asyncRecord
	asyncErr error
	// tail, when set, closes once the last record was read (TailLater);
	// tailErr then says whether it was sound.
	tail    chan struct{}
	tailErr error
	// synced is the first fsync that failed, nil while none has. It is
	// kept, not reported once: the kernel reports a failed writeback to
	// one fsync and may drop the pages it could not write, so a later
	// fsync's success says nothing of the records before it, and a
	// failure taken by one caller would leave another's Sync reporting
	// its record durable. Every later append, Sync and Close fails with
	// it; a log opened again reads and checks its tail from the file.
	synced error
}

// asyncRecord is one AppendAsync: done closes once its write(2) was made
// or failed, err then says which.
type asyncRecord struct {
	done chan struct{}
	err  error
}

var _ Sink = (*Log)(nil)

// maxLine bounds one record, so a corrupt file cannot make a reader hold
// an unbounded line in memory.
const maxLine = 16 << 20

// Open opens the log at path for appending, creating it (mode 0600, and its
// directory 0700) when it does not exist. It refuses a path that is a
// symbolic link or passes through one others could have placed; a
// directory on the way that the box or (under root) another user may
// write; a file with more than one name or that others may write; and a
// file whose last record is incomplete or does not match its own hash:
// appending after a broken tail would chain new evidence to something
// unverifiable. Run Verify to learn what is wrong with such a file.
func Open(path string, opts Options) (*Log, error) {
	// Every directory on the way is opened without following links and
	// checked (privfile), so a link planted anywhere on the path cannot
	// send the log, or the directories created for it, elsewhere.
	f, err := privfile.OpenAppend(path, os.O_RDWR, 0o600, privfile.Options{MakeDirs: true, BoxWritable: opts.BoxWritable})
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "audit: open %s", path)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errs.Wrap(errs.Unavailable, err, "audit: stat %s", path)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, errs.Unavailablef("audit: %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o022 != 0 {
		f.Close()
		return nil, errs.Unavailablef("audit: %s: others may write it (mode %v) (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	l := &Log{f: f, path: path, now: opts.Now, tails: opts.Tails}
	if l.now == nil {
		l.now = time.Now
	}
	if opts.TailLater {
		l.tail = make(chan struct{})
		go func() {
			defer close(l.tail)
			if l.tailErr = l.lock(); l.tailErr == nil {
				l.tailErr = l.readTail()
				l.unlock()
			}
		}()
		return l, nil
	}
	if err := l.lock(); err != nil {
		f.Close()
		return nil, err
	}
	err = l.readTail()
	l.unlock()
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// Ready returns once the log's last record is read and checked, with the
// reason it cannot be chained onto (Options.TailLater); without
// TailLater, Open did so already and Ready returns nil.
func (l *Log) Ready() error {
	if l.tail == nil {
		return nil
	}
	<-l.tail
	return l.tailErr
}

// Path is the file the log writes.
func (l *Log) Path() string { return l.path }

// Head returns the sequence number and hash of the last record this
// process wrote or saw; 0 and "" for an empty log, or one whose last
// record could not be chained onto (Ready says why).
func (l *Log) Head() (seq int64, hash string) {
	if l.Ready() != nil {
		return 0, ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.head
}

// Append sets r's Seq, Prev, Hash (and Time when zero), writes it and
// fsyncs the file.
func (l *Log) Append(r Record) error {
	_, err := l.append(r, false, nil)
	return err
}

// AppendDeferred is Append with the fsync taken off the caller's path: the
// record is written (one write(2), in the chain) before it returns, and its
// fsync runs in the background at once. It is durable when the next
// Append, Sync or Close returns without error: each waits for that fsync
// and reports its failure. A caller may use it only where it reports
// nothing of what the record covers before one of those returns (the
// kernel's wiring does so for the allowed decision of a command, whose
// result it reports after the run's own record and a Sync).
func (l *Log) AppendDeferred(r Record) error {
	_, err := l.append(r, true, nil)
	return err
}

// AppendAsync is AppendDeferred taken wholly off the caller's path: the
// record is encoded, written and fsynced in the background, after every
// record given before it. written returns once its write(2) is done
// (nil: it is in the file, in the chain, and survives airlock's death) or
// failed (the error, which Sync and Close report as well); the record is
// durable when the next Append, Sync or Close returns without error. A
// caller may start nothing the record covers before written returns nil,
// and report nothing of it before one of those returns.
func (l *Log) AppendAsync(r Record) (written func() error) {
	a := &asyncRecord{done: make(chan struct{})}
	l.mu.Lock()
	prev := l.pending
	l.pending = a
	l.mu.Unlock()
	go func() {
		if prev != nil {
			<-prev.done
		}
		end := starttrace.Begin("audit-append-background")
		_, a.err = l.append(r, true, a)
		end()
		l.mu.Lock()
		if a.err != nil && l.asyncErr == nil {
			l.asyncErr = a.err
		}
		if l.pending == a {
			l.pending = nil
		}
		l.mu.Unlock()
		close(a.done)
	}()
	return func() error {
		<-a.done
		return a.err
	}
}

// waitPending waits until every record AppendAsync was given before the
// call is written or failed.
func (l *Log) waitPending() {
	l.mu.Lock()
	a := l.pending
	l.mu.Unlock()
	if a != nil {
		<-a.done
	}
}

// Sync returns once every record written is durable: it waits for the
// records AppendAsync was given and for the fsync AppendDeferred started,
// and reports their failure. An error means a record may be lost; nothing
// it covers may be reported as recorded.
func (l *Log) Sync() error {
	l.waitPending()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.takeAsyncErr(); err != nil {
		return errors.Join(err, l.waitBackground())
	}
	return l.waitBackground()
}

// takeAsyncErr returns, once, the failure of a record AppendAsync was
// given. The caller holds l.mu.
func (l *Log) takeAsyncErr() error {
	err := l.asyncErr
	l.asyncErr = nil
	return err
}

// waitBackground takes the result of the background fsync, if one runs,
// and returns the first fsync that failed (Log.synced). The caller holds
// l.mu.
func (l *Log) waitBackground() error {
	if l.bg != nil {
		err := <-l.bg
		l.bg = nil
		if err != nil {
			l.failSync(err)
		}
	}
	return l.synced
}

// failSync keeps the first failed fsync (Log.synced). The caller holds
// l.mu.
func (l *Log) failSync(err error) {
	l.size = -1 // re-read the tail before chaining onto it
	if l.synced == nil {
		l.synced = errs.Wrap(errs.Unavailable, err, "audit: sync %s (a record may be lost; open the log again once the disk is sound)", l.path)
	}
}

// append writes r: fsynced before it returns, or (deferred) with the
// fsync left running. async is the AppendAsync whose goroutine calls it,
// nil for every other caller, which first waits for those given before.
func (l *Log) append(r Record, deferred bool, async *asyncRecord) (Record, error) {
	if r.Kind == "" {
		return r, errs.Invalidf("audit: a record needs a kind")
	}
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	if async == nil {
		l.waitPending()
	}
	if err := l.Ready(); err != nil {
		return r, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return r, errs.Unavailablef("audit: %s: log is closed", l.path)
	}
	// A deferred record's fsync must have succeeded before anything is
	// chained onto it (and before this record is reported as written).
	if err := l.waitBackground(); err != nil {
		return r, err
	}
	if err := l.lock(); err != nil {
		return r, err
	}
	defer l.unlock()
	st, err := l.f.Stat()
	if err != nil {
		return r, errs.Wrap(errs.Unavailable, err, "audit: stat %s", l.path)
	}
	if st.Size() != l.size {
		// Another process appended (or someone truncated the file):
		// take the chain up from what is really last.
		if err := l.readTail(); err != nil {
			return r, err
		}
	}
	r.Seq = l.seq + 1
	r.Prev = l.head
	line, hash, err := encode(r)
	if err != nil {
		return r, errs.Wrap(errs.Invalid, err, "audit")
	}
	if len(line) > maxLine {
		return r, errs.Invalidf("audit: %s record of %d bytes is over the %d-byte limit", r.Kind, len(line), maxLine)
	}
	n, err := l.f.Write(line)
	if err != nil || n != len(line) {
		// A partial line is left for Verify to report as a truncated
		// tail; this log refuses to chain onto it.
		l.size = -1
		return r, errs.Wrap(errs.Unavailable, errOr(err, io.ErrShortWrite), "audit: write %s", l.path)
	}
	if deferred {
		// The fsync of one file flushes every record written to it, so
		// the next Append's own fsync would cover this one; running it
		// now lets it overlap the caller's work instead.
		done := make(chan error, 1)
		f := l.f
		go func() {
			defer starttrace.Begin("audit-fsync-background")()
			done <- dataSync(f)
		}()
		l.bg = done
	} else {
		endSync := starttrace.Begin("audit-fsync")
		err = dataSync(l.f)
		endSync()
		if err != nil {
			l.failSync(err)
			return r, l.synced
		}
	}
	l.size = st.Size() + int64(n)
	l.seq, l.head = r.Seq, hash
	r.Hash = hash
	l.tails.keep(line[:len(line)-1], r.Seq, hash)
	return r, nil
}

// Close waits for a deferred record's fsync and closes the file; an error
// from either is returned. Appending after Close fails.
func (l *Log) Close() error {
	l.waitPending()
	l.Ready() // the tail's reader uses the file until then
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := errors.Join(l.takeAsyncErr(), l.waitBackground())
	err = errors.Join(err, l.f.Close())
	l.f = nil
	return err
}

func (l *Log) lock() error {
	for {
		err := unix.Flock(int(l.f.Fd()), unix.LOCK_EX)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINTR) {
			return errs.Wrap(errs.Unavailable, err, "audit: lock %s", l.path)
		}
	}
}

func (l *Log) unlock() { _ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN) }

// readTail reads the last record of the file and checks it against its own
// hash. The caller holds the flock.
func (l *Log) readTail() error {
	st, err := l.f.Stat()
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "audit: stat %s", l.path)
	}
	size := st.Size()
	if size == 0 {
		l.size, l.seq, l.head = 0, 0, ""
		return nil
	}
	last, err := lastLine(l.f, size)
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "audit: %s", l.path)
	}
	if last == nil {
		return errs.Unavailablef("audit: %s: the last record is incomplete (run airlock audit verify %s)", l.path, l.path)
	}
	seq, hash, ok := l.tails.get(last)
	if !ok {
		rec, problem := parseLine(last)
		if problem != "" {
			return errs.Unavailablef("audit: %s: the last record is broken: %s (run airlock audit verify %s)", l.path, problem, l.path)
		}
		seq, hash = rec.Seq, rec.Hash
		l.tails.keep(last, seq, hash)
	}
	l.size, l.seq, l.head = size, seq, hash
	return nil
}

// TailCache is the last record line its logs wrote or checked, with its
// sequence number and hash. What parseLine finds depends on the line's
// bytes alone, so a log whose last line is exactly those bytes is taken up
// from it without decoding and hashing the record again: `airlock warm`
// keeps one for its life and opens the log for every call it serves, and
// its last line is most often the previous call's run record, which it
// encoded itself. The zero value is an empty cache; it is safe for
// concurrent use. A nil *TailCache keeps nothing.
type TailCache struct {
	mu   sync.Mutex
	line string
	seq  int64
	hash string
}

// maxTailKept bounds the line a TailCache keeps; a longer one is parsed
// each time.
const maxTailKept = 64 << 10

// get returns the sequence number and hash of line when it is the line
// kept.
func (t *TailCache) get(line []byte) (seq int64, hash string, ok bool) {
	if t == nil {
		return 0, "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.line == "" || t.line != string(line) {
		return 0, "", false
	}
	return t.seq, t.hash, true
}

// keep keeps line (without its newline), a record in the encoding
// airlock writes whose sequence number and hash are seq and hash.
func (t *TailCache) keep(line []byte, seq int64, hash string) {
	if t == nil || len(line) == 0 || len(line) > maxTailKept {
		return
	}
	t.mu.Lock()
	t.line, t.seq, t.hash = string(line), seq, hash
	t.mu.Unlock()
}

// lastLine returns the last newline-terminated line of f (without the
// newline), or nil when the file does not end with a newline.
func lastLine(f *os.File, size int64) ([]byte, error) {
	var one [1]byte
	if _, err := f.ReadAt(one[:], size-1); err != nil {
		return nil, err
	}
	if one[0] != '\n' {
		return nil, nil
	}
	end := size - 1
	var tail []byte
	// A record is a kilobyte or two: the first read is small, and each
	// further one twice the one before, up to maxChunk. Every page of a
	// buffer is a page fault at a start, however little of it is used.
	chunk := int64(firstChunk)
	for off := end; off > 0; {
		n := chunk
		if n > off {
			n = off
		}
		chunk = min(2*chunk, maxChunk)
		off -= n
		buf := make([]byte, n, n+int64(len(tail)))
		if _, err := f.ReadAt(buf, off); err != nil {
			return nil, err
		}
		tail = append(buf, tail...)
		if i := bytes.LastIndexByte(tail[:n], '\n'); i >= 0 {
			return tail[i+1:], nil
		}
		if int64(len(tail)) > maxLine {
			return nil, fmt.Errorf("the last record is longer than %d bytes", maxLine)
		}
	}
	return tail, nil
}

// firstChunk and maxChunk bound the reads lastLine makes.
const (
	firstChunk = 4 << 10
	maxChunk   = 64 << 10
)

func errOr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}
