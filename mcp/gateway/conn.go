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

	bmu     sync.Mutex
	batches map[jsonrpc.ID]*batch

	closeOnce sync.Once
	closeErr  error
}

// batch collects the responses to one incoming batch, written together.
type batch struct {
	left      map[jsonrpc.ID]int
	responses []*jsonrpc.Response
}

func newLineConn(r io.Reader, w io.Writer, max int, closer func() error) *lineConn {
	return &lineConn{r: bufio.NewReaderSize(r, 64<<10), w: w, max: max, closer: closer}
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
			return nil, &BadFrame{ID: idFromEnds(head, tail), TooLong: true,
				Err: errs.Invalidf("a message of more than %d MiB", c.max>>20)}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		msgs, err := c.decode(line)
		if err != nil {
			return nil, &BadFrame{ID: idOf(line), Err: err}
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
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "not a JSON-RPC message")
		}
		return []jsonrpc.Message{m}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
		return nil, errs.Invalidf("an empty or broken batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &batch{left: map[jsonrpc.ID]int{}}
	for _, raw := range raws {
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "batch element not a JSON-RPC message")
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			if _, dup := b.left[r.ID]; dup {
				return nil, errs.Invalidf("batch holds id %v twice", r.ID.Raw())
			}
			b.left[r.ID] = len(b.responses)
			b.responses = append(b.responses, nil)
		}
		msgs = append(msgs, m)
	}
	if len(b.left) > 0 {
		c.bmu.Lock()
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*batch{}
		}
		for id := range b.left {
			c.batches[id] = b
		}
		c.bmu.Unlock()
	}
	return msgs, nil
}

// Write writes msg as one line; a response to a batch element waits for the
// rest of its batch and goes out with it as an array.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var data []byte
	var err error
	if r, ok := msg.(*jsonrpc.Response); ok {
		c.bmu.Lock()
		b := c.batches[r.ID]
		complete := false
		if b != nil {
			delete(c.batches, r.ID)
			b.responses[b.left[r.ID]] = r
			delete(b.left, r.ID)
			complete = len(b.left) == 0
		}
		c.bmu.Unlock()
		if b != nil {
			if !complete {
				return nil
			}
			raws := make([]json.RawMessage, len(b.responses))
			for i, resp := range b.responses {
				if raws[i], err = jsonrpc.EncodeMessage(resp); err != nil {
					return err
				}
			}
			data, err = json.Marshal(raws)
		}
	}
	if data == nil && err == nil {
		data, err = jsonrpc.EncodeMessage(msg)
	}
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
	var env struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &env) != nil || env.ID == nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(env.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

var (
	idAtStart = regexp.MustCompile(`^\s*\{(?:\s*"jsonrpc"\s*:\s*"2\.0"\s*,)?\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?[0-9]{1,18})\s*,`)
	idAtEnd   = regexp.MustCompile(`,\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?[0-9]{1,18})\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$`)
)

// idFromEnds finds the id of a message too long to parse from its first
// and last bytes, where JSON-RPC encoders put it.
func idFromEnds(head, tail []byte) jsonrpc.ID {
	for _, m := range [][][]byte{idAtStart.FindSubmatch(head), idAtEnd.FindSubmatch(tail)} {
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
