package pgwire

import (
	"context"

	"github.com/queenbridge/queenbridge/segment"
)

// PushGeneralOnly writes every segment through log_push_multi_v2, as
// PushBundle does for the segments the known-partition statement cannot
// take: the other side of the differential test.
func (db *DB) PushGeneralOnly(ctx context.Context, writes []segment.Write) ([]segment.Result, error) {
	if err := distinctPartitions(writes); err != nil {
		return nil, err
	}
	out := make([]segment.Result, len(writes))
	ords := make([]int, len(writes))
	for i := range ords {
		ords[i] = i
	}
	if err := db.pushGeneral(ctx, writes, ords, out, make([]bool, len(writes))); err != nil {
		return nil, err
	}
	return out, nil
}

// KnownSQL is the known-partition statement of a bundle of several
// segments, for the test that reads its plan.
const KnownSQL = knownSQL
