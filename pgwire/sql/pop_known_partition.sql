/* queen:pop */ WITH p AS (
    SELECT p.id, p.name, p.last_offset,
           queen.consumer_option_v2(q.other_options, 'leaseTime') AS lease_s,
           queen.consumer_option_v2(q.other_options, 'delayedProcessing') AS delay_s,
           queen.consumer_option_v2(q.other_options, 'windowBuffer') AS window_s
    -- The queue by its key, then its tenant checked: joined plainly, the
    -- generic plan reads the tenant's every queue (queues_tenant_name_key).
    FROM queen.log_partitions p
    CROSS JOIN LATERAL (SELECT x.tenant, x.other_options FROM queen.queues x WHERE x.id = p.queue_id OFFSET 0) q
    WHERE p.id = $1 AND q.tenant = $2
), cur AS (
    SELECT c.cursor_offset, c.lease_id IS NOT NULL AND c.lease_expires_at <= clock_timestamp() AS expired,
           c.lease_id IS NULL OR c.lease_expires_at <= clock_timestamp() AS free,
           p.lease_s, p.delay_s, p.window_s
    FROM p JOIN queen.consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = $3
), f AS (
    -- The first segment after the cursor (retention may have left the
    -- cursor below it): where the delivery starts.
    SELECT greatest(cur.cursor_offset, y.base_offset - 1) AS start_at
    FROM cur CROSS JOIN LATERAL (
        SELECT z.base_offset FROM queen.log_segments z
        WHERE z.partition_id = $1 AND z.end_offset > cur.cursor_offset
        ORDER BY z.end_offset LIMIT 1) y
    WHERE cur.free AND cur.window_s = 0
), e AS (
    -- The segment holding the batch's last offset (none: the partition ends
    -- before it). Offsets after the first stored segment have no holes, so
    -- the segments needed are exactly those ending in (cursor, e.last]: one
    -- index range, no segment read that is not delivered.
    SELECT coalesce((SELECT z.end_offset FROM queen.log_segments z
                     WHERE z.partition_id = $1 AND z.end_offset >= f.start_at + $5
                     ORDER BY z.end_offset LIMIT 1), 9223372036854775807) AS last
    FROM f
), w AS (
    SELECT y.base_offset, y.end_offset, y.hashes,
           greatest(y.base_offset - 1, cur.cursor_offset) AS start_at,
           y.end_offset - greatest(y.base_offset - 1, cur.cursor_offset) AS n
    FROM cur CROSS JOIN e JOIN queen.log_segments y
        ON y.partition_id = $1 AND y.end_offset > cur.cursor_offset AND y.end_offset <= e.last
    WHERE cur.delay_s = 0 OR y.created_at <= clock_timestamp() - make_interval(secs => cur.delay_s)
), r AS (
    SELECT w.*, sum(w.n) OVER (ORDER BY w.end_offset) AS run FROM w
), d AS (
    -- What is delivered, without its payloads (they go out as rows, once):
    -- r is in offset order (its window sorted it), and aggregates read
    -- their input in that order: no aggregate sorts again.
    -- to_off is cast back from numeric (run is a sum): g's probe bounds
    -- the index scan by it only as an int8.
    SELECT max(r.end_offset) AS last_end, min(r.start_at) AS start_at,
           max(r.start_at + least(r.n, $5 - (r.run - r.n)))::int8 AS to_off,
           coalesce(sum(least(r.n, $5 - (r.run - r.n))), 0)::int4 AS cnt,
           CASE WHEN bool_and(r.hashes IS NOT NULL) THEN string_agg(
               substring(r.hashes FROM ((r.start_at + 1 - r.base_offset) * 16 + 1)::int4 FOR (least(r.n, $5 - (r.run - r.n)) * 16)::int4),
               ''::bytea) END AS hashes
    FROM (SELECT * FROM r WHERE r.run - r.n < $5 ORDER BY r.end_offset) r
), g AS (
    -- The tombstoned offsets of the range: an index probe bounded by it.
    SELECT array_agg(t.message_offset ORDER BY t.message_offset) AS offs, count(*)::int4 AS n
    FROM d JOIN queen.log_tombstones t ON t.partition_id = $1 AND t.message_offset > d.start_at AND t.message_offset <= d.to_off
), u AS (
    -- live = 0: tombstones alone, stepped over (the cursor moves, no lease).
    -- cnt = 0: nothing to deliver, and the row still records an expired
    -- lease or a delivery past the cursor that retention removed; cleared
    -- (no lease, nothing delivered), as consumer_pop_v1 leaves such a row.
    UPDATE queen.consumer_cursors c SET
        lease_id         = CASE WHEN $6 OR d.cnt = g.n THEN NULL ELSE $4::uuid END,
        lease_expires_at = CASE WHEN $6 OR d.cnt = g.n THEN NULL ELSE clock_timestamp() + queen.consumer_duration_v1(cur.lease_s) END,
        cursor_offset    = CASE WHEN d.cnt > 0 AND ($6 OR d.cnt = g.n) THEN d.to_off ELSE c.cursor_offset END,
        delivered_to     = coalesce(d.to_off, c.cursor_offset),
        delivered_count  = d.cnt - g.n,
        acked_count      = CASE WHEN $6 THEN d.cnt - g.n ELSE 0 END,
        retry_count      = CASE WHEN d.cnt > 0 AND ($6 OR d.cnt = g.n) THEN 0 ELSE c.retry_count END,
        delivered_hashes = CASE WHEN g.n = 0 THEN d.hashes END,
        updated_at       = clock_timestamp()
    FROM cur, d, g
    WHERE c.partition_id = $1 AND c.consumer_group = $3
      AND (d.cnt > 0 OR (cur.window_s = 0 AND (cur.expired OR c.delivered_to > c.cursor_offset)))
      AND c.cursor_offset = cur.cursor_offset AND (c.lease_id IS NULL OR c.lease_expires_at <= clock_timestamp())
    RETURNING c.lease_expires_at, true AS won
), async AS (
    -- A claim under a lease commits without waiting for its flush (the
    -- docs' "Claims commit asynchronously"); an auto-ack pop, whose claim
    -- is the delivery's end, waits as every acknowledgement does.
    SELECT set_config('synchronous_commit', 'off', true) WHERE NOT $6 AND EXISTS (SELECT 1 FROM u)
)
SELECT CASE WHEN p.id IS NULL THEN 'missing'
            WHEN cur.cursor_offset IS NULL OR cur.window_s > 0 THEN 'general'
            WHEN NOT cur.free THEN 'leased'
            WHEN coalesce(d.cnt, 0) = 0 THEN 'empty'
            WHEN u.won IS NULL THEN 'leased'
            WHEN d.cnt = g.n THEN 'empty'
            ELSE 'ok' END,
       p.name, p.last_offset, CASE WHEN u.won AND d.cnt > 0 AND d.cnt = g.n THEN d.to_off ELSE cur.cursor_offset END,
       d.to_off, u.lease_expires_at, coalesce(cur.expired, false), g.offs,
       s.base_offset, s.created_at, s.payload
FROM (SELECT 1) one LEFT JOIN p ON true LEFT JOIN cur ON true LEFT JOIN d ON true LEFT JOIN g ON true LEFT JOIN u ON true
     LEFT JOIN async ON true
     LEFT JOIN LATERAL (
         -- The delivered segments, one row each, straight from the index
         -- range: their payloads are copied once, into the answer.
         SELECT y.base_offset, y.created_at, y.payload FROM queen.log_segments y
         WHERE u.won AND d.cnt > g.n AND y.partition_id = $1 AND y.end_offset > cur.cursor_offset AND y.end_offset <= d.last_end
           AND (cur.delay_s = 0 OR y.created_at <= clock_timestamp() - make_interval(secs => cur.delay_s))
         ORDER BY y.end_offset) s ON true
