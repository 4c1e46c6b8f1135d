package mcp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLoopbackOnly(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := LoopbackOnly(inner, []string{"airlock.test"})
	tests := []struct {
		name, host, origin string
		want               int
	}{
		{"loopback v4", "127.0.0.1:8931", "", http.StatusTeapot},
		{"loopback v6", "[::1]:8931", "", http.StatusTeapot},
		{"localhost", "localhost:8931", "", http.StatusTeapot},
		{"localhost with dot", "localhost.:8931", "", http.StatusTeapot},
		{"other loopback", "127.8.9.10", "", http.StatusTeapot},
		{"allowed by flag", "airlock.test:8931", "", http.StatusTeapot},
		{"rebinding name", "evil.example:8931", "", http.StatusForbidden},
		{"private address", "192.168.1.2:8931", "", http.StatusForbidden},
		{"localhost look-alike", "localhost.evil.example", "", http.StatusForbidden},
		{"same-machine origin", "127.0.0.1:8931", "http://localhost:3000", http.StatusTeapot},
		{"cross origin", "127.0.0.1:8931", "https://evil.example", http.StatusForbidden},
		{"null origin", "127.0.0.1:8931", "null", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.Host = tt.host
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("got %d, want %d", w.Code, tt.want)
			}
		})
	}
}
