package publish

import (
	"context"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// marks are the places of the last messages of one slot stored in each
// partition (queue, partition), as queen.publish_marks holds them: the
// transaction that stores a relayed message's segment also moves its
// partition's mark. A partition's messages of one slot are pushed, and so
// stored, in WAL order, so a message is stored exactly when its place is
// at or below its partition's mark. Read at the start of a session: what
// a replay hands out again is skipped by it. Owned by the session's
// pusher goroutine.
type marks map[[2]string]jsonapi.Mark

// loadMarks reads the slot's marks.
func (s *source) loadMarks(ctx context.Context, key string) (marks, error) {
	rows, err := s.r.cfg.Positions.RelayMarks(ctx, key)
	if err != nil {
		return nil, err
	}
	m := make(marks, len(rows))
	for _, r := range rows {
		m[[2]string{r.Queue, r.Partition}] = jsonapi.Mark{Slot: key, LSN: r.LSN, Index: r.Index}
	}
	return m, nil
}

// stored says the item, relayed with its mark, is stored already.
func (m marks) stored(it *jsonapi.Item) bool {
	have, ok := m[[2]string{it.Queue, it.Partition}]
	return ok && it.Mark != nil && (it.Mark.LSN < have.LSN || it.Mark.LSN == have.LSN && it.Mark.Index <= have.Index)
}
