/* queen:queue-consumers */ WITH q AS MATERIALIZED (
    SELECT q.id FROM queen.queues q WHERE q.tenant = $1 AND q.name = $2
), p AS MATERIALIZED (
    SELECT p.id, p.name, p.last_offset, p.last_write_at, fs.created_at AS first_at,
           coalesce(fs.base_offset - 1, p.last_offset) AS gone
    FROM queen.log_partitions p
    LEFT JOIN LATERAL (SELECT s.base_offset, s.created_at FROM queen.log_segments s
                       WHERE s.partition_id = p.id ORDER BY s.end_offset LIMIT 1) fs ON true
    WHERE p.queue_id = (SELECT q.id FROM q)
), c AS MATERIALIZED (
    SELECT c.partition_id, c.consumer_group, c.cursor_offset, c.lease_id, c.lease_expires_at, c.delivered_count
    FROM queen.consumer_cursors c WHERE c.partition_id = ANY (ARRAY(SELECT p.id FROM p))
), s AS MATERIALIZED (
    SELECT s.consumer_group, s.start_after FROM queen.consumer_subscriptions s WHERE s.queue_id = (SELECT q.id FROM q)
), g AS MATERIALIZED (
    SELECT s.consumer_group, s.start_after FROM s
    UNION
    SELECT c.consumer_group, NULL::timestamptz FROM c WHERE c.consumer_group NOT IN (SELECT s.consumer_group FROM s)
)
SELECT p.id, p.name, p.last_offset, p.last_write_at, p.last_offset - p.gone,
       g.consumer_group, c.partition_id IS NOT NULL, k.cursor, greatest(p.last_offset - greatest(k.cursor, p.gone), 0),
       c.lease_id, c.lease_expires_at, c.lease_id IS NOT NULL AND c.lease_expires_at > clock_timestamp(), c.delivered_count
FROM q
LEFT JOIN p ON true
LEFT JOIN g ON p.id IS NOT NULL
LEFT JOIN c ON c.partition_id = p.id AND c.consumer_group = g.consumer_group
LEFT JOIN LATERAL (SELECT CASE
    WHEN c.partition_id IS NOT NULL THEN c.cursor_offset
    WHEN g.consumer_group = '__QUEUE_MODE__' OR g.start_after IS NULL OR p.first_at IS NULL OR p.first_at > g.start_after THEN 0
    ELSE coalesce((SELECT y.end_offset FROM queen.log_segments y
                   WHERE y.partition_id = p.id AND y.created_at <= g.start_after ORDER BY y.end_offset DESC LIMIT 1), 0)
    END AS cursor) k ON g.consumer_group IS NOT NULL
