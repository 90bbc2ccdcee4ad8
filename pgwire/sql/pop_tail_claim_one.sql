/* queen:pop-tail-one */ WITH async AS (
    SELECT CASE WHEN $4 THEN '' ELSE set_config('synchronous_commit', 'off', true) END AS s
)
UPDATE queen.consumer_cursors c SET
    lease_id         = CASE WHEN $4 THEN NULL ELSE $3::uuid END,
    lease_expires_at = CASE WHEN $4 THEN NULL
                            ELSE clock_timestamp() + queen.consumer_duration_v1(queen.consumer_option_v2(q.other_options, 'leaseTime')) END,
    cursor_offset    = CASE WHEN $4 THEN $7::int8 ELSE c.cursor_offset END,
    delivered_to     = $7,
    delivered_count  = $8,
    acked_count      = CASE WHEN $4 THEN $8::int4 ELSE 0 END,
    retry_count      = CASE WHEN $4 THEN 0 ELSE c.retry_count END,
    delivered_hashes = $9,
    updated_at       = clock_timestamp()
FROM queen.log_partitions p
JOIN queen.queues q ON q.id = p.queue_id
CROSS JOIN (SELECT o.lease_id IS NOT NULL AS expired FROM queen.consumer_cursors o
            WHERE o.partition_id = $5 AND o.consumer_group = $2) e
CROSS JOIN async
WHERE c.partition_id = $5 AND c.consumer_group = $2 AND p.id = $5 AND q.tenant = $1
  AND c.cursor_offset = $6 AND (c.lease_id IS NULL OR c.lease_expires_at <= clock_timestamp())
  AND queen.consumer_option_v2(q.other_options, 'delayedProcessing') = 0
  AND queen.consumer_option_v2(q.other_options, 'windowBuffer') = 0
  AND EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = $5 AND s.end_offset = $10)
  AND NOT EXISTS (SELECT 1 FROM queen.log_tombstones t
                  WHERE t.partition_id = $5 AND t.message_offset > $6 AND t.message_offset <= $7)
RETURNING 1::int8, p.name, p.last_offset, c.lease_expires_at, e.expired
