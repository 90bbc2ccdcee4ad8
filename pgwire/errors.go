package pgwire

import "errors"

var (
	// ErrStatementTimeout: a bundle call ran past Config.StatementTimeout and
	// was cancelled; nothing of it is known written.
	ErrStatementTimeout = errors.New("pgwire: statement timeout")
	// ErrUnavailable: no connection could be had within Config.AcquireTimeout.
	ErrUnavailable = errors.New("pgwire: database unavailable")
	// ErrBadResult means log_push_multi_v2 answered something that does not
	// fit the bundle sent (arrays of the wrong length, a segment neither
	// queued nor duplicate).
	ErrBadResult = errors.New("pgwire: bundle result does not match the bundle")
	// ErrSegmentGone means no segment covers the offset asked for: retention
	// removed it.
	ErrSegmentGone = errors.New("pgwire: segment not found (removed by retention)")
	// ErrConsumerExists: a JetStream consumer of that name exists with
	// another configuration (PutConsumer, action create).
	ErrConsumerExists = errors.New("pgwire: consumer exists with another configuration")
	// ErrConsumerMissing: no JetStream consumer of that name (GetConsumer;
	// PutConsumer, action update; ConsumerPartitions).
	ErrConsumerMissing = errors.New("pgwire: consumer does not exist")
)

// IsTimeout reports whether err is a statement timeout.
func IsTimeout(err error) bool { return errors.Is(err, ErrStatementTimeout) }

// IsUnavailable reports whether err means the database could not be reached.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }
