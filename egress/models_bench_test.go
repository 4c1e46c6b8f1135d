package egress_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkModelFirstByte measures, in one run, the time from sending a
// streamed Responses API request to reading its first event: straight to
// the provider (a new TLS connection each time), and through the box's
// forwarder and the model proxy (which reads the request whole, decides
// its model, opens verified TLS to the provider with the real key, and
// relays the stream as it comes). The provider holds the rest of the
// stream back until the first event has been read.
func BenchmarkModelFirstByte(b *testing.B) {
	release := make(chan struct{}, 1)
	s := newModelStack(b, nil, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	})
	body := `{"model":"gpt-5","stream":true,"input":"` + strings.Repeat("x", 4096) + `"}`
	for _, tc := range []struct {
		name string
		url  string
		c    *http.Client
	}{
		{"direct", fmt.Sprintf("https://127.0.0.1:%d/v1/responses", s.port), &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: s.root.pool, ServerName: "models.test"}, DisableKeepAlives: true}}},
		{"model-proxy", s.openai + "/responses", s.client},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest("POST", tc.url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if tc.name == "direct" {
					req.Header.Set("Authorization", "Bearer "+s.realKey)
				}
				resp, err := tc.c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				line, err := bufio.NewReader(resp.Body).ReadString('\n')
				if err != nil || !strings.Contains(line, "response.created") {
					b.Fatalf("first line %q %v", line, err)
				}
				b.StopTimer()
				release <- struct{}{}
				resp.Body.Close()
				b.StartTimer()
			}
		})
	}
}
