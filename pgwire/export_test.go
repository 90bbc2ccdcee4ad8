package pgwire

import (
	"context"
	"io/fs"
	"strings"

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
var KnownSQL = knownSQL

// WholeAckSQL is the whole-batch acknowledgement statement, for the test
// that reads its plan.
var (
	WholeAckSQL      = wholeAckSQL
	WholeAckMovesSQL = wholeAckMovesSQL
)

// DeleteGroupSQL and SeekSQL are the consumer-group statements, for the
// test that reads their plans.
var (
	DeleteGroupSQL = deleteGroupSQL
	SeekSQL        = seekSQL
)

// CountSQL are the statements of the counts, with arguments to plan them
// by, for the test that reads their plans.
var CountSQL = map[string][]any{
	queueStatsSQL:     {tenantArg([16]byte{}), "", "", "", int64(100), 0},
	partitionStatsSQL: {int64(1)},
	tenantLagSQL:      {tenantArg([16]byte{})},
}

// PopKnownSQL and PopTailSQL are the pop statements, for the test that
// reads their plans.
var (
	PopKnownSQL = popKnownSQL
	PopTailSQL  = popTailSQL
)

// QueueConsumersSQL and RequeueSelectSQL are the console's statements, for
// the test that reads their plans.
var (
	QueueConsumersSQL = queueConsumersSQL
	RequeueSelectSQL  = requeueSelectSQL
)

// ArraysOnly sends db's lone claims and acknowledgements through the
// statements for many (popTailSQL, wholeAckMovesSQL), so a test holds both
// forms to the same answers. Call it before db's first call.
func (db *DB) ArraysOnly() { db.arraysOnly = true }

// StatementForms are the two forms of a lone claim and acknowledgement (one
// row, and the statement for many), each with what sets a DB to it.
var StatementForms = []struct {
	Name string
	Set  func(*DB)
}{{"one-row statements", func(*DB) {}}, {"array statements", (*DB).ArraysOnly}}

// PopFunctionOnce is one call of consumer_pop_v1 (by partition id when req
// has one, else by name), decoded as Pop decodes it, with the tombstoned
// offsets it left out or stepped over: one side of the pop's differential
// test.
func (db *DB) PopFunctionOnce(ctx context.Context, req PopRequest) (PopResult, []int64, error) {
	res, raw, err := db.popFunction(ctx, req)
	if err != nil {
		return res, nil, err
	}
	res, err = db.popDecode(ctx, req, res, raw)
	return res, raw.gone, err
}

// PopKnownOnce is one run of popKnownSQL, decoded as Pop decodes it;
// general: the statement sent the pop to consumer_pop_v1 (and answered
// nothing else).
func (db *DB) PopKnownOnce(ctx context.Context, req PopRequest) (res PopResult, gone []int64, general bool, err error) {
	res, raw, ok, err := db.popKnown(ctx, req)
	if err != nil || !ok {
		return res, nil, err == nil, err
	}
	res, err = db.popDecode(ctx, req, res, raw)
	return res, raw.gone, false, err
}

// UnreadSQLFiles are the files of sql/ that no statement reads.
func UnreadSQLFiles() ([]string, error) {
	entries, err := fs.ReadDir(sqlFiles, "sql")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".sql"); !statementsRead[name] {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
