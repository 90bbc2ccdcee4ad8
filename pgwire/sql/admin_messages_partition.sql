SELECT p.id, p.name, q.name, q.namespace, q.task, q.encryption_enabled, q.other_options, p.last_offset,
       g.names, g.cursors, g.tos, g.expires,
       (SELECT count(*) FROM queen.log_tombstones t WHERE t.partition_id = p.id),
       (SELECT count(DISTINCT d.message_offset) FROM queen.dead_letters d WHERE d.partition_id = p.id)
FROM queen.log_partitions p
JOIN queen.queues q ON q.id = p.queue_id
CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(c.consumer_group ORDER BY c.consumer_group), '{}') AS names,
           coalesce(array_agg(c.cursor_offset ORDER BY c.consumer_group), '{}') AS cursors,
           coalesce(array_agg(c.delivered_to ORDER BY c.consumer_group), '{}') AS tos,
           coalesce(array_agg(CASE WHEN c.lease_expires_at > clock_timestamp() THEN c.lease_expires_at END ORDER BY c.consumer_group), '{}') AS expires
    FROM queen.consumer_cursors c WHERE c.partition_id = p.id) g
