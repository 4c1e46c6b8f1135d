package forward

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestReadConnectAnswer: the CONNECT answer is read exactly: the proxy's
// one 200 opens the tunnel with what follows it left unread, its refusals
// give their first body line, and every other answer is an error.
func TestReadConnectAnswer(t *testing.T) {
	refusal := "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 62\r\nConnection: close\r\nX-Airlock-Egress: blocked\r\n\r\n" +
		"blocked by airlock egress policy: example.com:22 not allowed\n\n"
	tests := []struct {
		name, answer string
		refusal      string // "" with wantErr false: the tunnel opens
		wantErr      string
		rest         string // what stays in the reader after an open tunnel
	}{
		{name: "established", answer: "HTTP/1.1 200 Connection established\r\n\r\nSSH-2.0-x\r\n", rest: "SSH-2.0-x\r\n"},
		{name: "refused", answer: refusal, refusal: "blocked by airlock egress policy: example.com:22 not allowed"},
		{name: "refusal with an empty body", answer: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", refusal: "the egress proxy refused the connection (HTTP 503)"},
		{name: "refusal with control bytes", answer: "HTTP/1.1 403 Forbidden\r\nContent-Length: 4\r\n\r\na\x1bb\n", refusal: "the egress proxy refused the connection (HTTP 403)"},
		{name: "200 with headers", answer: "HTTP/1.1 200 Connection established\r\nX: y\r\n\r\n", wantErr: "carries headers"},
		{name: "200 of another reason", answer: "HTTP/1.1 200 OK\r\n\r\n", wantErr: "not the egress proxy's"},
		{name: "HTTP/1.0", answer: "HTTP/1.0 200 Connection established\r\n\r\n", wantErr: "not the egress proxy's"},
		{name: "another protocol", answer: "SSH-2.0-OpenSSH_9.6\r\n", wantErr: "not the egress proxy's"},
		{name: "bare LF", answer: "HTTP/1.1 200 Connection established\n\n", wantErr: "CRLF"},
		{name: "bare CR", answer: "HTTP/1.1 200 Connection\restablished\r\n\r\n", wantErr: "CR not followed by LF"},
		{name: "NUL", answer: "HTTP/1.1 200 Connection\x00established\r\n\r\n", wantErr: "control character"},
		{name: "no answer", answer: "", wantErr: "no answer"},
		{name: "endless line", answer: "HTTP/1.1 403 " + strings.Repeat("x", 2000) + "\r\n\r\n", wantErr: "longer than"},
		{name: "endless head", answer: "HTTP/1.1 403 Forbidden\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 500)+"\r\n", 20), wantErr: "longer than"},
		{name: "no length", answer: "HTTP/1.1 403 Forbidden\r\n\r\nblocked\n", wantErr: "without saying why"},
		{name: "two lengths", answer: "HTTP/1.1 403 Forbidden\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", wantErr: "bad Content-Length"},
		{name: "length too big", answer: "HTTP/1.1 403 Forbidden\r\nContent-Length: 99999\r\n\r\nx", wantErr: "bad Content-Length"},
		{name: "negative length", answer: "HTTP/1.1 403 Forbidden\r\nContent-Length: -1\r\n\r\n", wantErr: "bad Content-Length"},
		{name: "short body", answer: "HTTP/1.1 403 Forbidden\r\nContent-Length: 10\r\n\r\nabc", wantErr: "broke off"},
		{name: "header without colon", answer: "HTTP/1.1 403 Forbidden\r\nbroken\r\n\r\n", wantErr: "malformed header"},
		{name: "status of two digits", answer: "HTTP/1.1 20 x\r\n\r\n", wantErr: "not the egress proxy's"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.answer), maxAnswerHead)
			got, err := readConnectAnswer(br)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
			case err != nil || got != tc.refusal:
				t.Fatalf("got %q, %v; want %q", got, err, tc.refusal)
			case tc.refusal == "":
				rest, _ := io.ReadAll(br)
				if string(rest) != tc.rest {
					t.Fatalf("left %q in the reader, want %q", rest, tc.rest)
				}
			}
		})
	}
}
