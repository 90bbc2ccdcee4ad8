package cursors

import (
	"context"
	"fmt"
)

// nameDeadLetters fills in the transactionId of the dead letters whose
// message the consumer no longer held in memory (a +TERM of an offset
// delivered before a restart, or dropped from the buffer): one read of
// those offsets, in the flusher's goroutine. A message gone since
// (retention, a delete) keeps none; a failed read is logged and the dead
// letters are stored as they are.
func (e *JSEngine) nameDeadLetters(ups []AckUpdate) {
	var ranges []ReadRange
	for i := range ups {
		for _, d := range ups[i].Dead {
			if d.TransactionID == "" {
				ranges = append(ranges, ReadRange{PartitionID: ups[i].PartitionID, After: d.Offset - 1, Limit: 1})
			}
		}
	}
	if len(ranges) == 0 {
		return
	}
	var runs []ReadRun
	err := e.call(func(ctx context.Context) error {
		var err error
		runs, err = e.cfg.Store.ReadAfter(ctx, ranges)
		return err
	})
	if err == nil && len(runs) != len(ranges) {
		err = fmt.Errorf("%d runs answer %d ranges", len(runs), len(ranges))
	}
	if err != nil {
		e.cfg.Logger.Warn().Err(err).Int("dead_letters", len(ranges)).Msg("dead letters stored without their transactionId")
		return
	}
	k := 0
	for i := range ups {
		for j := range ups[i].Dead {
			d := &ups[i].Dead[j]
			if d.TransactionID != "" {
				continue
			}
			if run := runs[k]; len(run.Messages) > 0 && run.Messages[0].Offset == d.Offset {
				d.TransactionID = run.Messages[0].Frame.TransactionID
			}
			k++
		}
	}
}
