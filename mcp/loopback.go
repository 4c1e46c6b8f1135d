package mcp

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// LoopbackHost reports whether a Host header or URL host (name[:port])
// names this machine's loopback: localhost or a loopback IP address.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackOnly guards an MCP HTTP endpoint on a loopback address against
// DNS rebinding: a request whose Host, or whose Origin when it has one,
// is not a loopback name (or one of allow, names a person gave on the
// command line) is refused with 403 before h sees it. A web page the
// user visits could otherwise reach the endpoint through a name that
// resolves to 127.0.0.1.
func LoopbackOnly(h http.Handler, allow []string) http.Handler {
	ok := func(hostport string) bool {
		if LoopbackHost(hostport) {
			return true
		}
		host := hostport
		if h, _, err := net.SplitHostPort(hostport); err == nil {
			host = h
		}
		for _, a := range allow {
			if strings.EqualFold(a, host) || strings.EqualFold(a, hostport) {
				return true
			}
		}
		return false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok(r.Host) {
			http.Error(w, "Forbidden: the Host header does not name this machine", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host == "" || !ok(u.Host) {
				http.Error(w, "Forbidden: cross-origin request", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
