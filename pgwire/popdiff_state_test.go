package pgwire_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/pgwire"
)

// What the pop's differential test reads back: what a tail takes, and the
// cursor rows and subscriptions every side must agree on.

// pdTake is what a tail side's hot tail would deliver.
type pdTake struct{ cursors.TailTake }

// takeOf is what side s's tail takes for a pop of up to batch of pid for
// group, as the consume room asks it.
func takeOf(s *popSide, pid int64, group string, batch int) (pdTake, bool) {
	tk, ok := s.tail.Take(pid, group, batch)
	return pdTake{tk}, ok
}

func (tk pdTake) describe() string {
	var segs []string
	for _, s := range tk.Segments {
		segs = append(segs, fmt.Sprintf("%d-%d", s.Base, s.End))
	}
	return fmt.Sprintf("partition %d (%d, %d] %d messages, first end %d, segments %v, hashes %x", tk.PartitionID, tk.Cursor, tk.To, tk.Count,
		tk.FirstEnd, segs, tk.Hashes)
}

// messages are the take's messages, decoded from memory as the consume
// room decodes them.
func (tk pdTake) messages(r *popDiff) []pgwire.Message {
	r.t.Helper()
	var out []pgwire.Message
	for _, s := range tk.Segments {
		frames, err := s.Frames()
		if err != nil {
			r.fatalf("a segment in the tail: %v", err)
		}
		for k, f := range frames {
			if off := s.Base + int64(k); off > tk.Cursor && off <= tk.To {
				out = append(out, pgwire.Message{Offset: off, Frame: f, CreatedAt: s.CreatedAt})
			}
		}
	}
	return out
}

func timeSeconds(n int) time.Duration { return time.Duration(n) * time.Second }

// pdCursor is what the sides' cursor rows must agree on: the cursor, what
// was delivered up to, the retry count, where seeding put the cursor,
// whether a lease (live or not) is recorded, and, while a live one holds
// the row, the count delivered and acknowledged and the hash entries (those
// a pop through PostgreSQL recorded read as the digest a tail claim records
// of them). Without a live lease the counts and entries differ by design:
// an empty pop through popKnownSQL writes nothing, consumer_pop_v1's claims
// the row before it looks and so resets them; nothing reads them without a
// live lease (whole-batch acknowledgements ask for one, and with the cursor
// at delivered_to a lease-less acknowledgement releases whatever they say).
type pdCursor struct {
	cursor, to, start         int64
	held, live                bool
	delivered, acked, retries int32
	digest                    string
}

// cursors reads side s's cursor rows.
func (r *popDiff) cursors(s *popSide) map[pdRow]pdCursor {
	r.t.Helper()
	rows, err := s.db.Pool().Query(r.ctx, `SELECT q.name, p.name, c.consumer_group, c.cursor_offset, c.delivered_to, coalesce(c.start_offset, -1),
			c.lease_id IS NOT NULL, c.lease_id IS NOT NULL AND c.lease_expires_at > clock_timestamp(), c.delivered_count, c.acked_count, c.retry_count, c.delivered_hashes
		FROM queen.consumer_cursors c JOIN queen.log_partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id`)
	if err != nil {
		r.fatalf("cursor rows of %s: %v", s.name, err)
	}
	defer rows.Close()
	out := map[pdRow]pdCursor{}
	for rows.Next() {
		var k pdRow
		var c pdCursor
		var hashes []byte
		if err := rows.Scan(&k.queue, &k.partition, &k.group, &c.cursor, &c.to, &c.start, &c.held, &c.live, &c.delivered, &c.acked, &c.retries, &hashes); err != nil {
			r.fatalf("cursor rows of %s: %v", s.name, err)
		}
		if hashes != nil && !s.claimed[k] {
			hashes = pgwire.Digest(hashes)
		}
		c.digest = fmt.Sprintf("%x", hashes)
		if !c.live {
			c.delivered, c.acked, c.digest = 0, 0, ""
		}
		out[k] = c
	}
	if err := rows.Err(); err != nil {
		r.fatalf("cursor rows of %s: %v", s.name, err)
	}
	return out
}

// subscriptions reads side s's subscriptions: queue, group, mode, and
// whether it starts after a time.
func (r *popDiff) subscriptions(s *popSide) []string {
	r.t.Helper()
	return textRows(r.t, s.db.Pool(), `SELECT q.name || ' ' || x.consumer_group || ' ' || x.mode || ' ' || (x.start_after IS NOT NULL)::text
		FROM queen.consumer_subscriptions x JOIN queen.queues q ON q.id = x.queue_id ORDER BY 1`)
}

// compare checks that every side's cursor rows and subscriptions are the
// reference side's, and keeps its rows for the next step.
func (r *popDiff) compare() {
	r.t.Helper()
	ref := r.cursors(r.sides[0])
	subs := strings.Join(r.subscriptions(r.sides[0]), "\n")
	for _, s := range r.sides[1:] {
		got := r.cursors(s)
		for k := range got {
			if _, ok := ref[k]; !ok {
				r.fatalf("%s has a cursor row %v that %s has not", s.name, k, r.sides[0].name)
			}
		}
		for k, want := range ref {
			if g, ok := got[k]; !ok || g != want {
				r.fatalf("cursor rows of %v differ:\n%-12s %+v\n%-12s %+v (there %v)", k, r.sides[0].name, want, s.name, g, ok)
			}
		}
		if g := strings.Join(r.subscriptions(s), "\n"); g != subs {
			r.fatalf("subscriptions differ:\n%s:\n%s\n%s:\n%s", r.sides[0].name, subs, s.name, g)
		}
	}
	r.rows = ref
}
