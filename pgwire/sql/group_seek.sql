/* queen:group-seek */ WITH t AS MATERIALIZED (
    SELECT p.id, p.name, q.name AS qname,
           CASE WHEN $5 THEN p.last_offset ELSE coalesce(
               (SELECT y.end_offset FROM queen.log_segments y
                WHERE y.partition_id = p.id AND y.created_at <= $6 ORDER BY y.end_offset DESC LIMIT 1),
               (SELECT y.base_offset - 1 FROM queen.log_segments y
                WHERE y.partition_id = p.id ORDER BY y.end_offset LIMIT 1),
               p.last_offset) END AS target
    FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id
    WHERE q.tenant = $1 AND q.name = $3 AND ($4 = '' OR p.name = $4)
), u AS (
    INSERT INTO queen.consumer_cursors AS c (partition_id, consumer_group, cursor_offset, delivered_to, start_offset)
    SELECT t.id, $2, t.target, t.target, t.target FROM t ORDER BY t.id
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET
        cursor_offset = EXCLUDED.cursor_offset, delivered_to = EXCLUDED.delivered_to, start_offset = EXCLUDED.start_offset,
        delivered_count = 0, acked_count = 0, retry_count = 0, delivered_hashes = NULL,
        acked_above = NULL, delivery_offsets = NULL, delivery_counts = NULL,
        lease_id = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
    RETURNING c.partition_id, c.cursor_offset
)
SELECT t.qname, t.name, u.partition_id, u.cursor_offset FROM u JOIN t ON t.id = u.partition_id ORDER BY u.partition_id
