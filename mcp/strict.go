package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
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

// StrictHTTP refuses, with 400 and a JSON-RPC error, a POST whose body (at
// most max bytes; a larger one is 413) CheckJSON refuses; other requests
// reach h with the body as read.
func StrictHTTP(h http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
		r.Body.Close()
		if err != nil {
			http.Error(w, "mcp: the request body could not be read", http.StatusBadRequest)
			return
		}
		if int64(len(body)) > max {
			writeRefusal(w, http.StatusRequestEntityTooLarge, nil, errs.Invalidf("mcp: the message is over %d bytes", max))
			return
		}
		if err := CheckJSON(body); err != nil {
			writeRefusal(w, http.StatusBadRequest, body, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	})
}

func writeRefusal(w http.ResponseWriter, status int, msg []byte, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(refusal(msg, err))
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
