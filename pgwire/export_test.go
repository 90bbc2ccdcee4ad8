package pgwire

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"

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

// MigrateTo applies the numbered migrations up to version upTo and no
// function file: the schema as a bridge of that step left it.
func (db *DB) MigrateTo(ctx context.Context, upTo int) error {
	return db.migrateUpTo(ctx, upTo, nil)
}

// MigrateOlder migrates as a bridge of step upTo did: the numbered
// migrations up to upTo, then the function files of that bridge, in
// fsys's directory functions.
func (db *DB) MigrateOlder(ctx context.Context, upTo int, fsys fs.FS) error {
	fns, err := functionsIn(fsys)
	if err != nil {
		return err
	}
	return db.migrateUpTo(ctx, upTo, fns)
}

// migrateUpTo applies the numbered migrations up to version upTo, then fns.
func (db *DB) migrateUpTo(ctx context.Context, upTo int, fns []function) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var keep []migration
	for _, m := range ms {
		if m.version <= upTo {
			keep = append(keep, m)
		}
	}
	return db.migrate(ctx, keep, fns)
}

// MigrateEdited migrates as Migrate does, with the function files' texts as
// edit returns them: a bridge whose function files differ.
func (db *DB) MigrateEdited(ctx context.Context, edit func(name, sql string) string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	fns, err := functions()
	if err != nil {
		return err
	}
	for i := range fns {
		if sql := edit(fns[i].name, fns[i].sql); sql != fns[i].sql {
			sum := sha256.Sum256([]byte(sql))
			fns[i].sql, fns[i].sha = sql, hex.EncodeToString(sum[:])
		}
	}
	return db.migrate(ctx, ms, fns)
}

// WholeAckSQL is the whole-batch acknowledgement statement, for the test
// that reads its plan.
const (
	WholeAckSQL      = wholeAckSQL
	WholeAckMovesSQL = wholeAckMovesSQL
)

// DeleteGroupSQL and SeekSQL are the consumer-group statements, for the
// test that reads their plans.
const (
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
const (
	PopKnownSQL = popKnownSQL
	PopTailSQL  = popTailSQL
)

// QueueConsumersSQL and RequeueSelectSQL are the console's statements, for
// the test that reads their plans.
const (
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

// PlanMigration reads how a migration file of that version would run: its
// statements outside a transaction (nil: inside one), or why it is
// refused.
func PlanMigration(version int, name, sql string) ([]string, error) {
	m := migration{version: version, name: name, sql: sql}
	if err := m.plan(); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range m.outside {
		out = append(out, s.sql)
	}
	return out, nil
}

// ApplyMigration applies one migration file of that version as Migrate
// applies a pending one.
func (db *DB) ApplyMigration(ctx context.Context, version int, name, sql string) error {
	m := migration{version: version, name: name, sql: sql}
	if err := m.plan(); err != nil {
		return err
	}
	return db.migrate(ctx, []migration{m}, nil)
}

// PreLocks lists the table locks the migration transaction takes first for
// migrations of these texts, as "MODE table", in the order it takes them.
func PreLocks(sqls ...string) []string {
	var out []string
	for _, l := range preLocks(sqls) {
		out = append(out, l.mode+" "+l.table)
	}
	return out
}
