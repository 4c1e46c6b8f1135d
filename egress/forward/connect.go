package forward

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ConnectArg is the hidden first argument of the ProxyCommand mode:
// `airlock __airlock-connect HOST PORT` joins its standard input and output
// to HOST:PORT through the forwarder's HTTP CONNECT port.
const ConnectArg = "__airlock-connect"

// connectName is the binary's name when git runs it as GIT_PROXY_COMMAND,
// which passes only HOST PORT.
const connectName = "airlock-connect"

// IsConnect reports whether args (os.Args) ask for the ProxyCommand mode:
// either `airlock __airlock-connect HOST PORT` or the binary run under the
// name airlock-connect.
func IsConnect(args []string) bool {
	if len(args) > 1 && args[1] == ConnectArg {
		return true
	}
	return len(args) > 0 && filepath.Base(args[0]) == connectName
}

// ConnectMain runs the ProxyCommand mode for os.Args and returns the exit
// status: 0 when the tunnel ended normally, 1 when it was refused (the
// refusal is printed on standard error), 2 for bad arguments.
func ConnectMain(args []string) int {
	return connect(args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
}

func connect(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	var rest []string
	switch {
	case len(args) > 1 && args[1] == ConnectArg:
		rest = args[2:]
	case len(args) > 0:
		rest = args[1:]
	}
	if len(rest) != 2 {
		fmt.Fprintln(stderr, "airlock: usage: airlock "+ConnectArg+" HOST PORT")
		return 2
	}
	host, port := rest[0], rest[1]
	if _, err := strconv.ParseUint(port, 10, 16); err != nil || strings.HasPrefix(host, "-") || host == "" {
		fmt.Fprintf(stderr, "airlock: %s: invalid destination %q %q\n", ConnectArg, host, port)
		return 2
	}
	proxy := proxyAddr(getenv)
	if proxy == "" {
		fmt.Fprintf(stderr, "airlock: %s: no proxy configured (this runs inside an airlock box)\n", ConnectArg)
		return 1
	}
	c, err := net.DialTimeout("tcp", proxy, 10*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %s: reach the egress forwarder at %s: %v\n", ConnectArg, proxy, err)
		return 1
	}
	defer c.Close()
	target := net.JoinHostPort(strings.Trim(host, "[]"), port)
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		fmt.Fprintf(stderr, "airlock: %s: %v\n", ConnectArg, err)
		return 1
	}
	br := bufio.NewReaderSize(c, maxAnswerHead)
	if refusal, err := readConnectAnswer(br); err != nil {
		fmt.Fprintf(stderr, "airlock: %s: %s: %v\n", ConnectArg, target, err)
		return 1
	} else if refusal != "" {
		fmt.Fprintf(stderr, "airlock: %s\n", refusal)
		return 1
	}
	// Whatever the server already sent sits in br; it goes out first.
	go func() {
		io.Copy(c, stdin)
		c.(*net.TCPConn).CloseWrite() // pass the end of stdin on, keep reading
	}()
	io.Copy(stdout, br)
	return 0
}

// proxyAddr finds the forwarder's HTTP port: AIRLOCK_HTTP_PROXY first, then
// the standard variables.
func proxyAddr(getenv func(string) string) string {
	if a := getenv("AIRLOCK_HTTP_PROXY"); a != "" {
		return a
	}
	for _, k := range []string{"http_proxy", "HTTP_PROXY"} {
		if v := getenv(k); v != "" {
			if u, err := url.Parse(v); err == nil && u.Host != "" {
				return u.Host
			}
		}
	}
	return ""
}

// Bounds of the egress proxy's answer to a CONNECT: its head (status line
// and headers), one line of it, and the body of a refusal.
const (
	maxAnswerHead = 8 << 10
	maxAnswerLine = 1 << 10
	maxAnswerBody = 4 << 10
)

// established is the one answer that opens the tunnel (egress/http.go).
const established = "HTTP/1.1 200 Connection established"

// readConnectAnswer reads airlock's own egress proxy's answer to a CONNECT
// exactly, without net/http (which the in-box binary does not link): either
// "HTTP/1.1 200 Connection established" and an empty line, after which the
// tunnel's bytes follow in br, or a refusal, "HTTP/1.1 NNN Reason", headers
// with a Content-Length, and a short body whose first line is returned as
// the refusal. Anything else (another protocol, a line past its bound, a
// 200 with headers, a refusal without a readable body) is an error: the
// tunnel is not opened on an answer that is not the proxy's.
func readConnectAnswer(br *bufio.Reader) (refusal string, err error) {
	head := 0
	next := func() (string, error) {
		line, err := readAnswerLine(br)
		head += len(line) + 2
		if err == nil && head > maxAnswerHead {
			err = fmt.Errorf("the egress proxy's answer is longer than %d bytes", maxAnswerHead)
		}
		return line, err
	}
	status, err := next()
	if err != nil {
		return "", fmt.Errorf("no answer from the egress proxy: %v", err)
	}
	code, ok := statusCode(status)
	if !ok {
		return "", fmt.Errorf("the answer %q is not the egress proxy's", trimAnswer(status))
	}
	if code == 200 {
		if status != established {
			return "", fmt.Errorf("the answer %q is not the egress proxy's", trimAnswer(status))
		}
		if line, err := next(); err != nil || line != "" {
			return "", fmt.Errorf("the egress proxy's 200 answer carries headers or ends early; the tunnel was not opened")
		}
		return "", nil
	}
	length := -1
	for {
		line, err := next()
		if err != nil {
			return "", fmt.Errorf("the egress proxy refused (HTTP %d) and its answer broke off: %v", code, err)
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return "", fmt.Errorf("the egress proxy refused (HTTP %d) with a malformed header", code)
		}
		if strings.EqualFold(name, "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 || n > maxAnswerBody || length >= 0 {
				return "", fmt.Errorf("the egress proxy refused (HTTP %d) with a bad Content-Length", code)
			}
			length = n
		}
	}
	if length < 0 {
		return "", fmt.Errorf("the egress proxy refused (HTTP %d) without saying why", code)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return "", fmt.Errorf("the egress proxy refused (HTTP %d) and its answer broke off: %v", code, err)
	}
	first, _, _ := strings.Cut(string(body), "\n")
	if first = strings.TrimSpace(first); first == "" || !printable(first) {
		return fmt.Sprintf("the egress proxy refused the connection (HTTP %d)", code), nil
	}
	return first, nil
}

// readAnswerLine reads one line ended by CRLF, at most maxAnswerLine bytes,
// with no control character but tab (a bare CR or LF is refused).
func readAnswerLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		c, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		switch {
		case c == '\r':
			if n, err := br.ReadByte(); err != nil || n != '\n' {
				return "", errors.New("a CR not followed by LF")
			}
			return string(b), nil
		case c == '\n':
			return "", errors.New("a line not ended by CRLF")
		case (c < 0x20 && c != '\t') || c == 0x7f:
			return "", errors.New("a control character in the answer")
		case len(b) >= maxAnswerLine:
			return "", fmt.Errorf("a line longer than %d bytes", maxAnswerLine)
		}
		b = append(b, c)
	}
}

// statusCode reads "HTTP/1.1 NNN Reason" (the reason may be empty).
func statusCode(line string) (int, bool) {
	rest, ok := strings.CutPrefix(line, "HTTP/1.1 ")
	if !ok || len(rest) < 3 || (len(rest) > 3 && rest[3] != ' ') {
		return 0, false
	}
	n := 0
	for _, c := range rest[:3] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n < 100 {
		return 0, false
	}
	return n, true
}

// printable reports whether s holds no control character.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// trimAnswer shortens an unexpected line for the error that quotes it.
func trimAnswer(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
