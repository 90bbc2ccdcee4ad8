package pgwire

import "errors"

var (
	// ErrBadResult means log_push_multi_v1 answered something that does not
	// fit the bundle sent (wrong length, undecodable JSON).
	ErrBadResult = errors.New("pgwire: bundle result does not match the bundle")
	// ErrSegmentGone means no segment covers the offset asked for: retention
	// removed it.
	ErrSegmentGone = errors.New("pgwire: segment not found (removed by retention)")
)
