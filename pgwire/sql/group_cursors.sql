/* queen:groups */ SELECT c.consumer_group, q.name, p.name, p.id, p.last_offset, c.cursor_offset,
       coalesce(c.start_offset, 0), c.lease_id, c.lease_id IS NOT NULL AND c.lease_expires_at > clock_timestamp(), c.updated_at,
       CASE WHEN n.base_offset IS NULL THEN 0 ELSE greatest(p.last_offset - greatest(c.cursor_offset, n.base_offset - 1), 0) END,
       n.created_at, coalesce(floor(extract(epoch FROM clock_timestamp() - n.created_at)), 0)::int8,
       coalesce(s.mode, ''), s.start_after, s.created_at
FROM queen.queues q
JOIN queen.log_partitions p ON p.queue_id = q.id
JOIN queen.consumer_cursors c ON c.partition_id = p.id
LEFT JOIN queen.consumer_subscriptions s ON s.queue_id = q.id AND s.consumer_group = c.consumer_group
LEFT JOIN LATERAL (SELECT y.base_offset, y.created_at FROM queen.log_segments y
                   WHERE y.partition_id = p.id AND y.end_offset > c.cursor_offset AND p.last_offset > c.cursor_offset
                   ORDER BY y.end_offset LIMIT 1) n ON true
WHERE q.tenant = $1 AND ($2 = '' OR c.consumer_group = $2)
ORDER BY c.consumer_group, q.name, p.name
