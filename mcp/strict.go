package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/airlock-run/airlock/errs"
)

// MetaError is the key under `_meta` of a failed tool result (isError)
// that airlock made; its value names the failure's class:
// {"class": "invalid"}.
const MetaError = "airlock/error"

// A front end that hands messages to the MCP SDK decodes them with the
// SDK's parser, which the kernel never sees: a message whose envelope holds
// two spellings of one key ("name" and "NAME") could be read one way by
// the check and another by the SDK. Exact decoding is enforced before the
// SDK: a message CheckJSON refuses never reaches it, and the client gets a
// JSON-RPC error under the message's id with the reason.

// StrictStdio passes newline-delimited JSON-RPC from r to the returned
// reader, answering on w each message CheckJSON refuses (with the id it
// carries, when one can be read) instead of passing it. The returned writer
// is w with writes serialised, so the refusals and the SDK's own messages
// never interleave; the SDK must write through it.
func StrictStdio(r io.Reader, w io.Writer, maxLine int) (io.ReadCloser, io.WriteCloser) {
	lw := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxLine)
		for sc.Scan() {
			line := sc.Bytes()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if err := CheckJSON(line); err != nil {
				lw.Write(append(refusal(line, err), '\n'))
				continue
			}
			if _, err := pw.Write(append(line, '\n')); err != nil {
				return
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pr, lw
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error {
	if c, ok := l.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// refusal is the JSON-RPC error answering msg: invalid params, with the
// reason, under msg's id when a lenient read finds one (a notification's
// refusal has a null id, which a client drops).
func refusal(msg []byte, err error) []byte {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(msg, &env)
	id := env.ID
	if len(id) == 0 || (id[0] != '"' && (id[0] < '0' || id[0] > '9') && id[0] != '-') {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": errs.JSONRPCInvalid, "message": "airlock: the message was refused: " + err.Error()}})
	return b
}
