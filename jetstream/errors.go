package jetstream

import "errors"

// ErrStreams: a stream definition (QUEEN_JETSTREAM) is malformed.
var ErrStreams = errors.New("jetstream: bad stream definition")

// ErrOverlap: two stream filters, or a filter and the bridge's own
// subjects, capture a subject in common.
var ErrOverlap = errors.New("jetstream: overlapping subjects")
