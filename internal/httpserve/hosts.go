package httpserve

import (
	"net/http"
	"net/netip"
	"strings"
)

// LoopbackHosts answers only requests whose Host header names this machine's
// loopback interface: "localhost", a name under ".localhost", or a loopback
// address (127.0.0.0/8, ::1), with or without a port. Anything else gets
// 403 with refusal as its JSON body. Not enabled, it is next itself.
//
// It guards a listener on a loopback address that needs no token against
// DNS rebinding: a page of another site whose name is made to resolve to
// 127.0.0.1 is, to the browser, of the same origin as this service, so the
// browser's cross-site rules (the CORS preflight a JSON POST needs) no
// longer keep it out; but its requests name that site in Host.
//
// It also refuses a request a browser marks as sent by a page of another
// site (Sec-Fetch-Site "cross-site" or "same-site"; other clients do not
// send it): a GET needs no CORS preflight, and some GETs change state (a
// pop takes a lease, with autoAck it consumes), so an image tag on any page
// the person visits could otherwise consume their messages.
func LoopbackHosts(next http.Handler, enabled bool, refusal []byte) http.Handler {
	if !enabled {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if NotLoopback(r.Host, r.Header.Get("Sec-Fetch-Site")) {
			WriteJSON(w, http.StatusForbidden, refusal)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// NotLoopback reports whether LoopbackHosts refuses a request with this
// Host and Sec-Fetch-Site (a lean route applies the same rule).
func NotLoopback(host, secFetchSite string) bool {
	return !LoopbackHost(host) || secFetchSite == "cross-site" || secFetchSite == "same-site"
}

// LoopbackHost reports whether host (a Host header, or a listen address:
// a name or an address, with or without a port) names the loopback
// interface.
func LoopbackHost(host string) bool {
	// The port goes first, by hand (net.SplitHostPort allocates an error for
	// a host without one): "[v6]:port", "[v6]", "name:port", or a bare v6.
	if rest, ok := strings.CutPrefix(host, "["); ok {
		host, _, _ = strings.Cut(rest, "]")
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host, ':') == i {
		host = host[:i]
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") || (len(host) > len(".localhost") &&
		strings.EqualFold(host[len(host)-len(".localhost"):], ".localhost")) {
		return true
	}
	// An address: netip parses one without allocating (this runs on every
	// request of a tokenless listener); a name is not parsed (a failed
	// parse allocates its error).
	if host == "" || (host[0] < '0' || host[0] > '9') && !strings.Contains(host, ":") {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback() && ip.Zone() == ""
}
