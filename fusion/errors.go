package fusion

import "errors"

var (
	// ErrStopped: Submit was called after Stop began.
	ErrStopped = errors.New("fusion: stopped")
	// ErrOverloaded: accepting the submission would pass Config.MaxPendingBytes.
	ErrOverloaded = errors.New("fusion: too many bytes waiting to be written")
	// ErrAborted is the verdict error of frames still waiting when Stop's
	// context ended before they could be written.
	ErrAborted = errors.New("fusion: stopped before the frame could be written")
)
