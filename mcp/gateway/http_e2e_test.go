package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/mcp/httpfront"
)

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestWrapHTTPBoxFlood: `airlock mcp wrap --http` in front of a server in
// a real box. 40 initialize requests from a local process without the
// token start no box; with the token, at most the per-client cap (8) of
// boxes start and the rest get 429.
func TestWrapHTTPBoxFlood(t *testing.T) {
	requireTier1(t)
	u := newUser(t, "shell:\n  allow: [sleep]\n")
	port := freePort(t)
	cmd := u.wrapCmd([]string{"--http", fmt.Sprintf("127.0.0.1:%d", port)}, "sleep", "600")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	token, url := "", ""
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := regexp.MustCompile(`^airlock: mcp wrap: token: ([0-9a-f]{64})$`).FindStringSubmatch(sc.Text()); m != nil {
			token = m[1]
		}
		if m := regexp.MustCompile(`MCP gateway on (http://\S+/mcp)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatal("airlock mcp wrap --http did not say where it serves")
	}
	go io.Copy(io.Discard, stderr)

	codes := flood(url, "", 40)
	if n := boxes(cmd.Process.Pid); n != 0 || codes[http.StatusUnauthorized] != 40 {
		t.Fatalf("40 initialize requests without a token: %d boxed servers started, statuses %v; want none and 40 × 401", n, codes)
	}
	codes = flood(url, token, 40)
	if n := boxes(cmd.Process.Pid); n != httpfront.DefaultMaxClientSessions || codes[http.StatusTooManyRequests] != 40-httpfront.DefaultMaxClientSessions {
		t.Errorf("40 initialize requests with the token: %d boxed servers, statuses %v; want %d and the rest 429",
			n, codes, httpfront.DefaultMaxClientSessions)
	}
}

// flood posts n initialize requests at once (with token, when not "") and
// counts their statuses; a request the server never answers (the wrapped
// server here never does) counts as 0 after 3 s.
func flood(url, token string, n int) map[int]int {
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext}}
			r, _ := http.NewRequest("POST", url, strings.NewReader(initialize))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			code := 0
			if resp, err := c.Do(r); err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

// boxes counts the boxed `sleep` servers under pid, once their number
// has stopped changing.
func boxes(pid int) int {
	count := func() int {
		n := 0
		for _, p := range alive(descendants(pid)) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); err == nil && strings.TrimSpace(string(b)) == "sleep" {
				n++
			}
		}
		return n
	}
	last, since := count(), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && time.Since(since) < time.Second; {
		time.Sleep(100 * time.Millisecond)
		if n := count(); n != last {
			last, since = n, time.Now()
		}
	}
	return last
}
