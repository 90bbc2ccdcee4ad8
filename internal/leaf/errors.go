package leaf

import "errors"

var (
	// ErrNotConnected: Publish found the connection down (it is being
	// re-established); nothing was sent.
	ErrNotConnected = errors.New("leaf: not connected to the hub")
	// ErrClosed: the Conn was closed.
	ErrClosed = errors.New("leaf: connection closed")
	// ErrRefused: the hub answered the handshake with -ERR (a wrong user
	// or password, say); its text follows.
	ErrRefused = errors.New("leaf: the hub refused the connection")
	// ErrBadMessage: Publish was given a subject, reply or header it must
	// not send (the error says which), or a message larger than the hub's
	// max_payload; nothing was sent.
	ErrBadMessage = errors.New("leaf: bad message")
	// ErrNoConnection: a Set was asked to send for a tenant it has no
	// connection for (no login for its account); nothing was sent.
	ErrNoConnection = errors.New("leaf: no leaf connection for the tenant")
)
