package spool

import "errors"

var (
	// ErrFull: the append would take the spool past Config.MaxBytes.
	ErrFull = errors.New("spool: full (QUEEN_SPOOL_MAX_BYTES reached)")
	// ErrClosed: the spool was closed.
	ErrClosed = errors.New("spool: closed")
	// ErrCorrupt: a record failed its length or CRC check.
	ErrCorrupt = errors.New("spool: corrupt record")
)
