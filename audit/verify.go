package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Problem kinds a Report names.
const (
	// ProblemEdited: a record's bytes do not match its own hash, or were not
	// written the way airlock writes records.
	ProblemEdited = "edited"
	// ProblemMalformed: a line is not a record at all.
	ProblemMalformed = "malformed"
	// ProblemMissing: sequence numbers jump forward; records were deleted
	// (or the middle of the file was cut out).
	ProblemMissing = "missing"
	// ProblemOrder: a sequence number repeats or goes back; records were
	// inserted, duplicated or reordered.
	ProblemOrder = "order"
	// ProblemChain: the sequence is right but the record does not chain to
	// the one before it; a record was replaced or inserted with a forged
	// sequence number.
	ProblemChain = "chain"
	// ProblemTruncatedTail: the last line has no newline; a writer was
	// interrupted, or the file was cut.
	ProblemTruncatedTail = "truncated-tail"
	// ProblemHead: the log does not end at the head hash the caller expected
	// (records were cut from the end, or the whole file was rewritten).
	ProblemHead = "head"
)

// Problem is one thing wrong with a log.
type Problem struct {
	Line   int    `json:"line"` // 1-based line number
	Seq    int64  `json:"seq,omitempty"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Report is what Verify found.
type Report struct {
	// OK is true when there is no problem.
	OK bool `json:"ok"`
	// Records counts the lines that parsed as records.
	Records int `json:"records"`
	// LastSeq and Head are the sequence number and hash of the last record
	// that parsed; keep Head elsewhere to detect later truncation.
	LastSeq int64  `json:"last_seq"`
	Head    string `json:"head"`
	// TruncatedTail is true when the last line is incomplete; it is also
	// listed among the problems.
	TruncatedTail bool      `json:"truncated_tail"`
	Problems      []Problem `json:"problems,omitempty"`
	// MoreProblems counts problems left out after the first maxProblems.
	MoreProblems int `json:"more_problems,omitempty"`
}

const maxProblems = 100

// VerifyOptions refine Verify.
type VerifyOptions struct {
	// Head, when set, is the hash the log must end with (or pass through:
	// a log may have grown since the head was noted).
	Head string
}

// Verify reads a whole log and reports every place where it is not the
// unbroken chain Append writes. The error is only for failing to read r;
// a tampered log gives a Report with OK false.
func Verify(r io.Reader) (Report, error) {
	return VerifyWith(r, VerifyOptions{})
}

// VerifyWith is Verify with options.
func VerifyWith(r io.Reader, opts VerifyOptions) (Report, error) {
	var rep Report
	add := func(p Problem) {
		if len(rep.Problems) < maxProblems {
			rep.Problems = append(rep.Problems, p)
		} else {
			rep.MoreProblems++
		}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		lineNo   int
		wantSeq  int64 = 1
		prev     string
		sawHead  bool
		line     []byte
		tooLong  bool
		complete bool
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			tooLong = true
		} else {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return rep, fmt.Errorf("read audit log: %w", err)
		}
		complete = err == nil
		if len(line) == 0 && !complete && !tooLong {
			break // clean end of file
		}
		lineNo++
		switch {
		case !complete:
			rep.TruncatedTail = true
			add(Problem{Line: lineNo, Kind: ProblemTruncatedTail, Detail: fmt.Sprintf("the last line is incomplete (%d bytes, no newline)", len(line))})
		case tooLong:
			add(Problem{Line: lineNo, Kind: ProblemMalformed, Detail: fmt.Sprintf("line longer than %d bytes", maxLine)})
		default:
			rec, problem := parseLine(line[:len(line)-1])
			if problem != "" {
				kind := ProblemEdited
				if rec.Hash == "" {
					kind = ProblemMalformed
				}
				add(Problem{Line: lineNo, Seq: rec.Seq, Kind: kind, Detail: problem})
				// Resynchronise on what the line claims, so one bad line
				// is one problem rather than a cascade.
				if rec.Hash != "" {
					wantSeq, prev = rec.Seq+1, rec.Hash
				} else {
					wantSeq++
					prev = "?"
				}
				break
			}
			rep.Records++
			switch {
			case rec.Seq > wantSeq:
				add(Problem{Line: lineNo, Seq: rec.Seq, Kind: ProblemMissing, Detail: fmt.Sprintf("records %d to %d are missing", wantSeq, rec.Seq-1)})
			case rec.Seq < wantSeq:
				add(Problem{Line: lineNo, Seq: rec.Seq, Kind: ProblemOrder, Detail: fmt.Sprintf("sequence %d where %d was expected", rec.Seq, wantSeq)})
			case rec.Prev != prev && prev != "?":
				add(Problem{Line: lineNo, Seq: rec.Seq, Kind: ProblemChain, Detail: "does not chain to the record before it"})
			}
			wantSeq, prev = rec.Seq+1, rec.Hash
			rep.LastSeq, rep.Head = rec.Seq, rec.Hash
			if opts.Head != "" && rec.Hash == opts.Head {
				sawHead = true
			}
		}
		line, tooLong = line[:0], false
		if !complete {
			break
		}
	}
	if opts.Head != "" && !sawHead {
		add(Problem{Line: lineNo, Kind: ProblemHead, Detail: "the expected head " + opts.Head + " is not in the log"})
	}
	rep.OK = len(rep.Problems) == 0 && rep.MoreProblems == 0
	return rep, nil
}

// parseLine checks one stored line (without newline) against its own hash
// and against the encoding Append uses, and decodes it. problem is empty
// when the line is sound. rec.Hash is set whenever the line at least ends
// with a well-formed hash.
func parseLine(line []byte) (rec Record, problem string) {
	b, claimed, ok := split(line)
	if !ok {
		return rec, "not an airlock audit record"
	}
	rec.Hash = claimed
	var s body // numbers kept as written (UseNumber)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return rec, "does not decode: " + err.Error()
	}
	rec.Seq = s.Seq
	if got := hashOf(b); got != claimed {
		return rec, "does not match its hash"
	}
	// The hash matches, so these bytes were hashed as they are; still,
	// airlock writes one encoding only, and a line that differs from it
	// (duplicate keys, spacing, reordered keys) was written by something
	// else.
	again, err := json.Marshal(s)
	if err != nil || !bytes.Equal(again, b) {
		return rec, "not in the encoding airlock writes"
	}
	t, err := time.Parse(timeLayout, s.Time)
	if err != nil {
		return rec, "bad time: " + err.Error()
	}
	if s.Seq < 1 {
		return rec, fmt.Sprintf("bad sequence number %d", s.Seq)
	}
	rec = Record{Seq: s.Seq, Time: t, Kind: s.Kind, CallDigest: s.CallDigest, Verdict: s.Verdict,
		Rule: s.Rule, Reason: s.Reason, Decider: s.Decider, Fields: s.Fields, Prev: s.Prev, Hash: claimed}
	return rec, ""
}

// Read decodes every sound record of a log, for tools that show it. Use
// Verify to learn whether the log can be trusted.
func Read(r io.Reader, fn func(Record) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine+1)
	for sc.Scan() {
		rec, problem := parseLine(sc.Bytes())
		if problem != "" {
			continue
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return sc.Err()
}
