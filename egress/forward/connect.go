package forward

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
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
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %s: %s: no answer from the egress proxy: %v\n", ConnectArg, target, err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 1024)).ReadString('\n')
		resp.Body.Close()
		if line = strings.TrimSpace(line); line == "" {
			line = resp.Status
		}
		fmt.Fprintf(stderr, "airlock: %s\n", line)
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
