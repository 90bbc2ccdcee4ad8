/* queen:ack-one */ UPDATE queen.consumer_cursors c SET
    cursor_offset    = CASE WHEN $8 = 'completed' THEN c.delivered_to ELSE c.cursor_offset END,
    acked_count      = CASE WHEN $8 = 'completed' THEN c.delivered_count ELSE c.acked_count END,
    retry_count      = CASE WHEN $8 = 'retry' THEN c.retry_count ELSE 0 END,
    lease_id         = NULL,
    lease_expires_at = NULL,
    updated_at       = clock_timestamp()
FROM queen.log_partitions p
JOIN queen.queues q ON q.id = p.queue_id
WHERE c.partition_id = $2 AND c.consumer_group = $3 AND p.id = $2 AND q.tenant = $1
  AND c.lease_id = $4 AND c.lease_expires_at > clock_timestamp() AND c.acked_count = 0
  AND c.delivered_count = $5 AND c.delivered_hashes IN ($6, $7) AND c.delivered_to - c.cursor_offset = $5
RETURNING 1::int8, c.cursor_offset, false, q.name, p.name
