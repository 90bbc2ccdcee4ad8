package schema

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// How each migration file runs, decided from its text when it is read.
//
// Most run inside the migration transaction, with the function files, so
// that a bridge never sees half of a migration (a function dropped by a
// migration and made again by its file, migration 0012). An index, though,
// is made and dropped CONCURRENTLY, which PostgreSQL runs only outside a
// transaction block: that takes SHARE UPDATE EXCLUSIVE on the table, which
// no statement of a live bridge waits for, where a plain CREATE INDEX
// stops every write to the table and a plain DROP INDEX every statement
// that touches it (and, queued behind the running ones, deadlocks with
// them). So:
//
//   - A file whose statements are all CREATE INDEX or DROP INDEX runs
//     outside the transaction, statement by statement, each made
//     CONCURRENTLY and IF [NOT] EXISTS by the runner. Files released before
//     this rule (0011, 0016) were written as plain DROP INDEX; their text
//     must not change (databases recorded their hashes,
//     TestAppliedMigrationsDoNotChange), so the runner reads the statement
//     kind rather than a marker. A database that applied them in a
//     transaction has them recorded and never runs them again; one that
//     did not runs them concurrently and ends with the same schema.
//   - A file whose header has the line outsideMarker runs outside the
//     transaction as it is written: every index statement in it must say
//     CONCURRENTLY and IF [NOT] EXISTS itself.
//   - Outside statements are idempotent, because one may have run when
//     the bridge stopped before recording its migration: IF [NOT] EXISTS,
//     and an index a failed CONCURRENTLY build left invalid is dropped and
//     built again (migrate.go).
//
// The outside migrations of one start run after its transaction, in their
// order: a transactional migration must not rely on an index an outside
// migration of the same release makes or drops.
//
// A transactional migration that takes a strong lock on a table it did not
// create (ALTER TABLE, a plain index statement, TRUNCATE, LOCK, ...) must
// say so in a header line "-- lock: <mode> on queen.<table>: <why>", and in
// docs/operations.md; files from lockRuleFrom on are refused without it.

// outsideMarker, a line of a migration's header, runs it outside a
// transaction block.
const outsideMarker = "-- migrate: outside transaction"

// lockRuleFrom is the first migration held to the "-- lock:" header rule;
// the ones before it were released before the rule, and
// docs/operations.md lists the locks they take.
const lockRuleFrom = 18

var (
	createIndex = regexp.MustCompile(`(?is)^CREATE\s+(UNIQUE\s+)?INDEX\s+(CONCURRENTLY\s+)?(IF\s+NOT\s+EXISTS\s+)?(\S+)\s+ON\s+(\S+)(.*)$`)
	dropIndex   = regexp.MustCompile(`(?is)^DROP\s+INDEX\s+(CONCURRENTLY\s+)?(IF\s+EXISTS\s+)?(\S+)\s*$`)
	lineComment = regexp.MustCompile(`--[^\n]*`)
	createdHere = regexp.MustCompile(`(?im)^\s*CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\S+)`)
	// strongLock finds the statements that lock an existing table against
	// reads or writes, and the table they name.
	strongLock = regexp.MustCompile(`(?im)^\s*(?:ALTER\s+TABLE(?:\s+IF\s+EXISTS)?(?:\s+ONLY)?|TRUNCATE(?:\s+TABLE)?|LOCK(?:\s+TABLE)?|DROP\s+TABLE(?:\s+IF\s+EXISTS)?|CLUSTER|VACUUM\s+FULL|REINDEX\s+TABLE|CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?\S+\s+ON(?:\s+ONLY)?|CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+.*?\s+ON)\s+([\w.]+)`)
)

// outsideStatement is one statement of a migration run outside a
// transaction.
type outsideStatement struct {
	sql string
	// index is the qualified name of the index a CREATE INDEX makes: the
	// runner drops it first when an earlier, failed build left it invalid.
	index string
}

// plan reads how m runs: it sets m.outside for a migration that runs
// outside the transaction, and refuses a file that breaks the rules above.
func (m *migration) plan() error {
	marked := false
	for _, l := range strings.Split(m.sql, "\n") {
		if strings.TrimSpace(l) == outsideMarker {
			marked = true
		}
	}
	stmts := splitStatements(m.sql)
	indexOnly := len(stmts) > 0 && !strings.Contains(m.sql, "$")
	for _, s := range stmts {
		if !createIndex.MatchString(s) && !dropIndex.MatchString(s) {
			indexOnly = false
		}
	}
	switch {
	case marked:
		if strings.Contains(m.sql, "$") {
			return fmt.Errorf("schema: migration %s runs outside a transaction and so is split at ';': it must hold no dollar-quoted text", m.name)
		}
		for _, s := range stmts {
			st, err := outsideAsWritten(s)
			if err != nil {
				return fmt.Errorf("schema: migration %s: %w", m.name, err)
			}
			m.outside = append(m.outside, st)
		}
	case indexOnly:
		for _, s := range stmts {
			m.outside = append(m.outside, concurrently(s))
		}
	default:
		if m.version >= lockRuleFrom {
			if t := undeclaredLock(m.sql); t != "" {
				return fmt.Errorf("schema: migration %s takes a strong lock on %s, a table it did not create: "+
					"say so in a header line \"-- lock: <mode> on %s: <why>\" (and in docs/operations.md), or make the change without it", m.name, t, t)
			}
		}
	}
	return nil
}

// splitStatements cuts a file of plain statements (no dollar quotes, no
// semicolons in literals) at ';', without its comments.
func splitStatements(sql string) []string {
	var out []string
	for _, s := range strings.Split(lineComment.ReplaceAllString(sql, ""), ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// concurrently rewrites a plain index statement as its CONCURRENTLY, IF
// [NOT] EXISTS form.
func concurrently(s string) outsideStatement {
	if m := createIndex.FindStringSubmatch(s); m != nil {
		name, table := m[4], m[5]
		return outsideStatement{
			sql:   "CREATE " + m[1] + "INDEX CONCURRENTLY IF NOT EXISTS " + name + " ON " + table + m[6],
			index: qualifiedIndex(name, table),
		}
	}
	m := dropIndex.FindStringSubmatch(s)
	return outsideStatement{sql: "DROP INDEX CONCURRENTLY IF EXISTS " + m[3]}
}

// outsideAsWritten takes a statement of a marked file as it is, once it
// is sure an index statement in it is concurrent and idempotent.
func outsideAsWritten(s string) (outsideStatement, error) {
	if m := createIndex.FindStringSubmatch(s); m != nil {
		if m[2] == "" || m[3] == "" {
			return outsideStatement{}, fmt.Errorf("%q outside a transaction must be CREATE INDEX CONCURRENTLY IF NOT EXISTS", s)
		}
		return outsideStatement{sql: s, index: qualifiedIndex(m[4], m[5])}, nil
	}
	if m := dropIndex.FindStringSubmatch(s); m != nil && (m[1] == "" || m[2] == "") {
		return outsideStatement{}, fmt.Errorf("%q outside a transaction must be DROP INDEX CONCURRENTLY IF EXISTS", s)
	}
	return outsideStatement{sql: s}, nil
}

// qualifiedIndex names an index in its table's schema, where PostgreSQL
// puts it.
func qualifiedIndex(name, table string) string {
	if schema, _, ok := strings.Cut(table, "."); ok && !strings.Contains(name, ".") {
		return schema + "." + name
	}
	return name
}

// liveLockOrder is the order in which the bridge's statements take the
// tables that migrations alter: queue rows before partition rows (the lock
// order of pgwire/doc.go), then a group's subscription and cursor rows,
// then the log and what hangs off it. The migration transaction takes the
// strong locks its migrations need in this order, first (preLocks), so
// that it never holds one of them while it waits for another that a live
// statement holding the first would want next: such a wait is a cycle
// that PostgreSQL breaks by killing one side, or, with the lock timeout, a
// migration that gives up on every try. Tables not listed come after, by
// name.
var liveLockOrder = []string{
	"queen.queues", "queen.log_partitions", "queen.consumer_subscriptions", "queen.consumer_cursors",
	"queen.log_segments", "queen.log_txns", "queen.log_tombstones", "queen.dead_letters",
}

// tableLock is a lock a migration takes on an existing table.
type tableLock struct{ table, mode string }

// preLocks answers the strong table locks the statements of sqls take
// (the tables they do not create themselves), in liveLockOrder, each
// once, in the strongest mode asked for.
func preLocks(sqls []string) []tableLock {
	rank := map[string]int{"SHARE": 1, "SHARE ROW EXCLUSIVE": 2, "ACCESS EXCLUSIVE": 3}
	modes := map[string]string{}
	for _, sql := range sqls {
		exempt := map[string]bool{}
		for _, m := range createdHere.FindAllStringSubmatch(sql, -1) {
			exempt[strings.ToLower(m[1])] = true
		}
		for _, m := range strongLock.FindAllStringSubmatch(lineComment.ReplaceAllString(sql, ""), -1) {
			t := strings.ToLower(m[1])
			if exempt[t] {
				continue
			}
			mode := "ACCESS EXCLUSIVE"
			switch verb := strings.ToUpper(strings.TrimSpace(m[0])); {
			case strings.HasPrefix(verb, "CREATE") && strings.Contains(verb, "TRIGGER"):
				mode = "SHARE ROW EXCLUSIVE"
			case strings.HasPrefix(verb, "CREATE"):
				mode = "SHARE"
			}
			if rank[mode] > rank[modes[t]] {
				modes[t] = mode
			}
		}
	}
	pos := func(t string) int {
		for i, o := range liveLockOrder {
			if o == t {
				return i
			}
		}
		return len(liveLockOrder)
	}
	var out []tableLock
	for t, m := range modes {
		out = append(out, tableLock{t, m})
	}
	sort.Slice(out, func(i, j int) bool {
		if pi, pj := pos(out[i].table), pos(out[j].table); pi != pj {
			return pi < pj
		}
		return out[i].table < out[j].table
	})
	return out
}

// undeclaredLock answers the first table a strong-lock statement of sql
// names that sql neither creates nor declares in a "-- lock:" line; "" if
// none.
func undeclaredLock(sql string) string {
	exempt := map[string]bool{}
	for _, m := range createdHere.FindAllStringSubmatch(sql, -1) {
		exempt[strings.ToLower(m[1])] = true
	}
	var declared []string
	for _, l := range strings.Split(sql, "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(l), "-- lock:"); ok {
			declared = append(declared, strings.ToLower(d))
		}
	}
	body := lineComment.ReplaceAllString(sql, "")
	for _, m := range strongLock.FindAllStringSubmatch(body, -1) {
		t := strings.ToLower(m[1])
		if exempt[t] {
			continue
		}
		ok := false
		for _, d := range declared {
			if strings.Contains(d, t) {
				ok = true
			}
		}
		if !ok {
			return m[1]
		}
	}
	return ""
}
