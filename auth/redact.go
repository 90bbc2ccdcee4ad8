package auth

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces a secret wherever one is removed.
const Redacted = "xxxxx"

// keyValueSecret matches password=... in a key/value connection string
// (PostgreSQL's "host=... password=secret"), quoted or not.
var keyValueSecret = regexp.MustCompile(`(?i)\b(password|pass|passwd|sslpassword|token|secret)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// URL returns s with the password of its user info and secret-looking
// query parameters redacted. It handles comma-separated lists of URLs
// (QUEEN_NATS_URL) and PostgreSQL key/value DSNs; what it cannot parse it
// redacts as a key/value string.
func URL(s string) string {
	if strings.Contains(s, ",") && strings.Contains(s, "://") {
		parts := strings.Split(s, ",")
		for i, p := range parts {
			parts[i] = URL(p)
		}
		return strings.Join(parts, ",")
	}
	if !strings.Contains(s, "://") {
		return keyValueSecret.ReplaceAllString(s, "${1}="+Redacted)
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return keyValueSecret.ReplaceAllString(s, "${1}="+Redacted)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Redacted)
		} else if strings.HasPrefix(u.Scheme, "nats") || strings.HasPrefix(u.Scheme, "tls") || strings.HasPrefix(u.Scheme, "ws") {
			u.User = url.User(Redacted) // nats://<token>@host: the user info is a token
		}
	}
	q := u.Query()
	changed := false
	for k := range q {
		if keyValueSecret.MatchString(k + "=x") {
			q.Set(k, Redacted)
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}
