/* queen:pop-tail */ WITH v AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::bool[], $5::int8[], $6::int8[], $7::int8[], $8::int4[], $9::bytea[], $10::int8[])
        WITH ORDINALITY AS v(tenant, grp, lease, auto, pid, cur, to_off, n, h, fe, ord)
    ORDER BY pid, grp
), l AS (
    SELECT v.ord, v.pid, v.lease, v.auto, v.to_off, v.n, v.h, x.*
    FROM v CROSS JOIN LATERAL (
        SELECT c.ctid AS tid, p.name, p.last_offset, c.lease_id IS NOT NULL AS expired,
               queen.consumer_option_v2(q.other_options, 'leaseTime') AS lease_s
        FROM queen.consumer_cursors c
        JOIN queen.log_partitions p ON p.id = c.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.partition_id = v.pid AND c.consumer_group = v.grp AND q.tenant = v.tenant
          AND c.cursor_offset = v.cur AND (c.lease_id IS NULL OR c.lease_expires_at <= clock_timestamp())
          AND queen.consumer_option_v2(q.other_options, 'delayedProcessing') = 0
          AND queen.consumer_option_v2(q.other_options, 'windowBuffer') = 0
          AND EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = v.pid AND s.end_offset = v.fe)
          AND NOT EXISTS (SELECT 1 FROM queen.log_tombstones t
                          WHERE t.partition_id = v.pid AND t.message_offset > v.cur AND t.message_offset <= v.to_off)
        FOR UPDATE OF c) x
), u AS (
    UPDATE queen.consumer_cursors c SET
        lease_id         = CASE WHEN l.auto THEN NULL ELSE l.lease END,
        lease_expires_at = CASE WHEN l.auto THEN NULL ELSE clock_timestamp() + queen.consumer_duration_v1(l.lease_s) END,
        cursor_offset    = CASE WHEN l.auto THEN l.to_off ELSE c.cursor_offset END,
        delivered_to     = l.to_off,
        delivered_count  = l.n,
        acked_count      = CASE WHEN l.auto THEN l.n ELSE 0 END,
        retry_count      = CASE WHEN l.auto THEN 0 ELSE c.retry_count END,
        delivered_hashes = l.h,
        updated_at       = clock_timestamp()
    FROM l
    WHERE c.ctid = l.tid
    RETURNING l.ord, l.name, l.last_offset, c.lease_expires_at, l.expired, l.auto
), async AS (
    SELECT set_config('synchronous_commit', 'off', true)
    WHERE EXISTS (SELECT 1 FROM u) AND NOT EXISTS (SELECT 1 FROM u WHERE u.auto)
)
SELECT u.ord, u.name, u.last_offset, u.lease_expires_at, u.expired FROM u LEFT JOIN async ON true
