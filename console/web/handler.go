package web

import (
	"embed"
	"io/fs"
	"net"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Config says how the pages are served.
type Config struct {
	// Tokens reports whether the bridge's HTTP routes need a bearer token.
	// Without tokens the pages are served to loopback peers only. Default
	// false.
	Tokens bool
}

// Handler serves the console: the shell of each page at / and under
// /console/, and its script and style sheet under /console/static/.
type Handler struct {
	cfg    Config
	shell  []byte
	assets http.Handler
}

// New builds the handler from the embedded files.
func New(cfg Config) *Handler {
	shell, err := static.ReadFile("static/index.html")
	if err != nil {
		panic("console/web: the embedded shell is missing: " + err.Error()) // a build without the files
	}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("console/web: " + err.Error())
	}
	return &Handler{cfg: cfg, shell: shell, assets: http.StripPrefix("/console/static/", http.FileServerFS(sub))}
}

// pages are the console's paths; /console/queues/{queue} is matched by
// prefix.
var pages = map[string]bool{"/": true, "/console": true, "/console/": true, "/console/queues": true,
	"/console/messages": true, "/console/dead-letters": true}

// assets are the files served under /console/static/; the shell is
// served only at the pages' paths, and nothing else of the embedded folder
// is served.
var assets = map[string]bool{"/console/static/console.js": true, "/console/static/console.css": true}

// notOpen is the answer to a peer that is not on the loopback interface
// while the bridge has no tokens.
const notOpen = "The console is served only to this machine while the bridge has no HTTP tokens: without tokens every " +
	"route acts with every right for anyone who reaches it. Configure QUEEN_HTTP_ADMIN_TOKENS (and QUEEN_HTTP_TOKENS " +
	"for tenants) to open the console to other machines; its pages then ask for a token.\n"

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.cfg.Tokens && !Loopback(r.RemoteAddr) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(notOpen))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hd := w.Header()
	// The pages run only their own script and talk only to this origin;
	// no other site may frame them, and no address leaks to another.
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
	p := r.URL.Path
	switch {
	case assets[p]:
		h.assets.ServeHTTP(w, r)
	case pages[p] || strings.HasPrefix(p, "/console/queues/") && len(p) > len("/console/queues/"):
		hd.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(h.shell)
	default:
		http.Error(w, "no console page at "+p, http.StatusNotFound)
	}
}

// Loopback reports whether a request's peer address (http.Request's
// RemoteAddr, host:port) is on the loopback interface: 127.0.0.0/8 or ::1.
func Loopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}
