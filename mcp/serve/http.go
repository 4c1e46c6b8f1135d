package serve

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// loopbackOnly refuses requests whose Host, or Origin when there is one,
// names anything but this machine's loopback or one of allow. A page in a
// browser may make requests to 127.0.0.1 through a name its own DNS points
// there (DNS rebinding); the name it used is still in Host.
func loopbackOnly(h http.Handler, allow []string) http.Handler {
	ok := func(hostport string) bool {
		host := hostport
		if hh, _, err := net.SplitHostPort(hostport); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		if strings.EqualFold(host, "localhost") {
			return true
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return true
		}
		for _, a := range allow {
			if a != "" && strings.EqualFold(host, a) {
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
