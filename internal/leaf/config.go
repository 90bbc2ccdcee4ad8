package leaf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/rs/zerolog"
)

// Config says which hub to connect to and as whom.
type Config struct {
	// URL is the hub's leafnode listener: nats-leaf://host:port (also
	// nats://, leaf://, or tls:// for TLS), or a comma list of them tried
	// in turn. A user and password in the URL are used when User,
	// Password and Token are empty. Required.
	URL string
	// User and Password, or Token, authenticate the leaf; all "" when
	// the listener has no authorization. Default "".
	User, Password string
	Token          string
	// TLS, when set, upgrades the connection after the hub's INFO (with
	// a tls:// URL or a hub that requires TLS, a default configuration is
	// used when nil). Default nil: plain TCP.
	TLS *tls.Config
	// Name is the leaf's name in the hub's logs and monitoring.
	// Default "queen-bridge".
	Name string
	// Logger receives connection events (lost, re-established, -ERR).
	// Default: zerolog.Nop().
	Logger zerolog.Logger
}

// ParseURL checks a Config.URL without connecting: every entry of the
// comma list is a URL with a scheme the leafnode listener speaks and a
// host:port.
func ParseURL(raw string) ([]*url.URL, error) {
	var out []*url.URL
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		u, err := url.Parse(part)
		if err != nil {
			// url.Error repeats the whole URL, password and all: keep
			// only its reason.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("leaf: URL %q: %w", redact(part), err)
		}
		switch u.Scheme {
		case "nats-leaf", "nats", "leaf", "tls":
		default:
			return nil, fmt.Errorf("leaf: URL %q: the scheme must be nats-leaf, nats, leaf or tls", redact(part))
		}
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
			return nil, fmt.Errorf("leaf: URL %q: wants host:port", redact(part))
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("leaf: no URL")
	}
	return out, nil
}

// redact drops a password from a URL for errors and logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if i := strings.LastIndexByte(raw, '@'); i >= 0 {
			return "…@" + raw[i+1:]
		}
		return raw
	}
	return u.Redacted()
}
