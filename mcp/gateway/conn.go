package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Conn is one side of the relay: the client's connection (an SDK transport's
// connection, or a lineConn on standard input and output) or the wrapped
// server's (a lineConn on its pipes). mcp.Connection satisfies it.
type Conn interface {
	Read(context.Context) (jsonrpc.Message, error)
	Write(context.Context, jsonrpc.Message) error
	Close() error
}

// BadFrame is a frame a lineConn could not take as JSON-RPC: not JSON,
// duplicate keys, not a message, or longer than the frame limit. The relay
// answers it and reads on; only the end of the stream ends a connection.
type BadFrame struct {
	// ID is the request's id when it could be read, else invalid.
	ID jsonrpc.ID
	// TooLong is set for a frame over the limit.
	TooLong bool
	// Reused is set for a request whose id is still in flight.
	Reused bool
	// Request is set unless the frame reads as an answer (a "result" or
	// "error" member comes before any "method"): its id is then one of the
	// sender's requests, not that of a request of the other side's.
	Request bool
	Err     error
}

func (b *BadFrame) Error() string { return b.Err.Error() }

// lineConn speaks newline-delimited JSON-RPC (MCP's stdio transport) over a
// reader and a writer. Unlike the SDK's, it survives garbage: a line that is
// not a message is reported as a *BadFrame and reading goes on, and a line
// over max bytes is skipped without being held in memory.
type lineConn struct {
	r      *bufio.Reader
	max    int
	queue  []jsonrpc.Message
	closer func() error

	wmu sync.Mutex
	w   io.Writer

	// track, on a client's connection, keeps the ids of its requests in
	// flight (with the batch each came in, nil for none) until they are
	// answered: a request reusing one is refused here, and its refusal
	// never taken for the answer of the first.
	track    bool
	bmu      sync.Mutex
	inflight map[jsonrpc.ID]*batch
	// refused, when set, hears of calls refused inside a batch.
	refused func(id jsonrpc.ID, err error)

	closeOnce sync.Once
	closeErr  error
}

// batch collects the responses to one incoming batch, written together.
type batch struct {
	left      map[jsonrpc.ID]int
	responses []*jsonrpc.Response
}

func newLineConn(r io.Reader, w io.Writer, max int, closer func() error) *lineConn {
	return &lineConn{r: bufio.NewReaderSize(r, 64<<10), w: w, max: max, closer: closer, track: true, inflight: map[jsonrpc.ID]*batch{}}
}

// Read returns the next message, a *BadFrame for a line that is not one,
// or io.EOF at the end of the stream.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, head, tail, err := c.readLine()
		if err != nil {
			return nil, err
		}
		if head != nil {
			return nil, &BadFrame{ID: idFromEnds(head, tail), TooLong: true, Request: !startsAnswer(head),
				Err: errs.Invalidf("a message of more than %d MiB", c.max>>20)}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		msgs, err := c.decode(line)
		if errors.Is(err, errNothing) {
			continue
		}
		var bad *BadFrame
		if errors.As(err, &bad) {
			return nil, bad
		}
		if err != nil {
			return nil, &BadFrame{ID: idOf(line), Request: !startsAnswer(line), Err: err}
		}
		c.queue = msgs[1:]
		return msgs[0], nil
	}
}

// readLine reads one line. A line over c.max is dropped; its first and last
// bytes come back as head and tail so its id may still be found.
func (c *lineConn) readLine() (line, head, tail []byte, err error) {
	var buf []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		if head == nil && len(buf)+len(chunk) > c.max {
			head = append([]byte(nil), append(buf, chunk...)[:min(4096, len(buf)+len(chunk))]...)
			buf = nil
		}
		if head != nil {
			tail = append(tail, chunk...)
			if len(tail) > 4096 {
				tail = append(tail[:0], tail[len(tail)-4096:]...)
			}
		} else {
			buf = append(buf, chunk...)
		}
		switch {
		case err == nil:
			return buf, head, tail, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(buf) > 0 || head != nil):
			return buf, head, tail, nil
		default:
			return nil, nil, nil, err
		}
	}
}

func (c *lineConn) decode(line []byte) ([]jsonrpc.Message, error) {
	if err := mcp.CheckJSON(line); err != nil {
		return nil, err
	}
	if line[0] != '[' {
		m, err := decodeExact(line)
		if err != nil {
			return nil, err
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() && c.track {
			c.bmu.Lock()
			_, reused := c.inflight[r.ID]
			if !reused {
				c.inflight[r.ID] = nil
			}
			c.bmu.Unlock()
			if reused {
				return nil, &BadFrame{ID: r.ID, Reused: true, Request: true, Err: errReused(r.ID)}
			}
		}
		return []jsonrpc.Message{m}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
		return nil, errs.Invalidf("an empty or broken batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &batch{left: map[jsonrpc.ID]int{}}
	seen := map[jsonrpc.ID]bool{}
	for _, raw := range raws {
		m, err := decodeExact(raw)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "batch element")
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			if seen[r.ID] {
				return nil, errs.Invalidf("batch holds id %v twice", r.ID.Raw())
			}
			seen[r.ID] = true
		}
		msgs = append(msgs, m)
	}
	if !c.track {
		return msgs, nil
	}
	// Each call is answered in the batch's array; one whose id is still
	// in flight is answered there with the refusal, and not passed on.
	c.bmu.Lock()
	defer c.bmu.Unlock()
	kept := msgs[:0]
	for _, m := range msgs {
		r, ok := m.(*jsonrpc.Request)
		if !ok || !r.IsCall() {
			kept = append(kept, m)
			continue
		}
		if _, reused := c.inflight[r.ID]; reused {
			b.responses = append(b.responses, &jsonrpc.Response{ID: r.ID, Error: mcp.Error(errReused(r.ID))})
			if c.refused != nil {
				c.refused(r.ID, errReused(r.ID))
			}
			continue
		}
		b.left[r.ID] = len(b.responses)
		b.responses = append(b.responses, nil)
		c.inflight[r.ID] = b
		kept = append(kept, m)
	}
	if len(b.left) == 0 && len(b.responses) > 0 {
		// Every call in it was refused: answer it now.
		if err := c.writeBatchLocked(b); err != nil {
			return nil, err
		}
	}
	if len(kept) == 0 {
		return nil, errNothing
	}
	return kept, nil
}

// errNothing is a frame that held nothing left to pass on (a batch whose
// every call was answered already); Read reads on.
var errNothing = errors.New("nothing to pass on")

func errReused(id jsonrpc.ID) error {
	return errs.Invalidf("a request with id %v is already in flight; wait for its answer or use another id", id.Raw())
}

// envelope names the members of a JSON-RPC message, exactly as they are
// spelled: Go's decoder would take "Method" or "ID" for them.
var envelope = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// decodeExact reads one JSON-RPC message whose keys (already checked by
// mcp.CheckJSON: no two alike under folding) are exactly the members
// JSON-RPC names; anything else is refused rather than guessed at.
func decodeExact(raw []byte) (jsonrpc.Message, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, errs.Invalidf("not a JSON-RPC message: not an object")
	}
	for k := range env {
		if !envelope[k] {
			return nil, errs.Invalidf("not a JSON-RPC message: unknown member %q (members are jsonrpc, id, method, params, result, error, spelled exactly)", k)
		}
	}
	if string(env["jsonrpc"]) != `"2.0"` {
		return nil, errs.Invalidf(`not a JSON-RPC message: "jsonrpc" is not "2.0"`)
	}
	id, err := exactID(env["id"])
	if err != nil {
		return nil, err
	}
	if m, ok := env["method"]; ok {
		var method string
		if json.Unmarshal(m, &method) != nil || method == "" {
			return nil, errs.Invalidf("not a JSON-RPC message: the method is not a string")
		}
		if _, ok := env["result"]; ok {
			return nil, errs.Invalidf("not a JSON-RPC message: a request with a result")
		}
		if _, ok := env["error"]; ok {
			return nil, errs.Invalidf("not a JSON-RPC message: a request with an error")
		}
		params := env["params"]
		if len(params) > 0 && params[0] != '{' && params[0] != '[' {
			return nil, errs.Invalidf("not a JSON-RPC message: params are not an object or array")
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: params}, nil
	}
	if !id.IsValid() {
		return nil, errs.Invalidf("not a JSON-RPC message: neither a method nor an id")
	}
	if _, ok := env["params"]; ok {
		return nil, errs.Invalidf("not a JSON-RPC message: a response with params")
	}
	resp := &jsonrpc.Response{ID: id, Result: env["result"]}
	if e, ok := env["error"]; ok {
		var fields map[string]json.RawMessage
		if json.Unmarshal(e, &fields) != nil {
			return nil, errs.Invalidf("not a JSON-RPC message: the error is not an object")
		}
		je := &jsonrpc.Error{Data: fields["data"]}
		for k := range fields {
			if k != "code" && k != "message" && k != "data" {
				return nil, errs.Invalidf("not a JSON-RPC message: unknown error member %q", k)
			}
		}
		if json.Unmarshal(fields["code"], &je.Code) != nil || json.Unmarshal(fields["message"], &je.Message) != nil {
			return nil, errs.Invalidf("not a JSON-RPC message: the error has no integer code and string message")
		}
		resp.Error, resp.Result = je, nil
	} else if len(resp.Result) == 0 {
		return nil, errs.Invalidf("not a JSON-RPC message: a response with neither result nor error")
	}
	return resp, nil
}

// exactID reads an id: a string, an integer, null or absent (invalid).
func exactID(raw json.RawMessage) (jsonrpc.ID, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return jsonrpc.ID{}, nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return jsonrpc.ID{}, errs.Invalidf("not a JSON-RPC message: a broken id")
		}
		return jsonrpc.MakeID(s)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return jsonrpc.ID{}, errs.Invalidf("not a JSON-RPC message: the id is neither a string nor an integer")
	}
	return jsonrpc.MakeID(float64(n))
}

// Write writes msg as one line; a response to a batch element waits for the
// rest of its batch and goes out with it as an array.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && c.track {
		c.bmu.Lock()
		b := c.inflight[r.ID]
		delete(c.inflight, r.ID)
		if b != nil {
			b.responses[b.left[r.ID]] = r
			delete(b.left, r.ID)
			var err error
			if len(b.left) == 0 {
				err = c.writeBatchLocked(b)
			}
			c.bmu.Unlock()
			return err
		}
		c.bmu.Unlock()
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return c.writeLine(data)
}

// writeBatchLocked writes the answers of a complete batch as one array.
func (c *lineConn) writeBatchLocked(b *batch) error {
	raws := make([]json.RawMessage, len(b.responses))
	for i, resp := range b.responses {
		var err error
		if raws[i], err = jsonrpc.EncodeMessage(resp); err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
	}
	data, err := json.Marshal(raws)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return c.writeLine(data)
}

// writeAside writes a response on its own, outside the tracking of ids in
// flight: the answer to a frame that was refused before it was taken as a
// request, which may carry the id of a request still in flight.
func (c *lineConn) writeAside(r *jsonrpc.Response) error {
	data, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return c.writeLine(data)
}

// writeLine writes data and a newline as one write.
func (c *lineConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		if c.closer != nil {
			c.closeErr = c.closer()
		}
	})
	return c.closeErr
}

// idOf reads the id of a line that is JSON but not a valid message (or has
// duplicate keys), so the error can answer it; invalid when there is none.
func idOf(line []byte) jsonrpc.ID {
	var env map[string]json.RawMessage
	if json.Unmarshal(line, &env) != nil {
		return jsonrpc.ID{}
	}
	id, err := exactID(env["id"]) // "id" exactly, as decodeExact reads it
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

// startsAnswer reports whether the object data begins (data may be cut
// short) has a top-level "result" or "error" member before any "method".
func startsAnswer(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	depth := 1
	key := true
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			if depth == 1 {
				key = true
			}
			if depth == 0 {
				return false
			}
			continue
		}
		if depth != 1 {
			continue
		}
		if key {
			switch tok {
			case "method":
				return false
			case "result", "error":
				return true
			}
			key = false
			continue
		}
		key = true // a scalar value at depth 1
	}
}

// idAtStart and idAtEnd are compiled on first use: their bounded
// repetitions cost about a millisecond and a half at every airlock start.
var (
	idAtStart = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*\{(?:\s*"jsonrpc"\s*:\s*"2\.0"\s*,)?\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?[0-9]{1,18})\s*,`)
	})
	idAtEnd = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`,\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?[0-9]{1,18})\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`)
	})
)

// idFromEnds finds the id of a message too long to parse from its first
// and last bytes, where JSON-RPC encoders put it.
func idFromEnds(head, tail []byte) jsonrpc.ID {
	for _, m := range [][][]byte{idAtStart().FindSubmatch(head), idAtEnd().FindSubmatch(tail)} {
		if m == nil {
			continue
		}
		var v any
		if json.Unmarshal(m[1], &v) != nil {
			continue
		}
		if id, err := jsonrpc.MakeID(v); err == nil {
			return id
		}
	}
	return jsonrpc.ID{}
}
