queen.log_partitions p
    LEFT JOIN LATERAL (SELECT s.base_offset, s.created_at FROM queen.log_segments s
                       WHERE s.partition_id = p.id ORDER BY s.end_offset LIMIT 1) fs ON true
    LEFT JOIN LATERAL (SELECT s.created_at FROM queen.log_segments s
                       WHERE s.partition_id = p.id ORDER BY s.end_offset DESC LIMIT 1) ls ON true
    LEFT JOIN LATERAL (SELECT c.cursor_offset, c.delivered_to, c.lease_id IS NOT NULL AND c.lease_expires_at > now() AS live
                       FROM queen.consumer_cursors c WHERE c.partition_id = p.id
                       ORDER BY c.consumer_group <> '__QUEUE_MODE__', c.cursor_offset LIMIT 1) rc ON true
    LEFT JOIN LATERAL (SELECT count(*) FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > now()) AS leases,
                              coalesce(sum(c.delivered_count) FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > now()), 0) AS batch,
                              coalesce(sum(c.acked_count) FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > now()), 0) AS acked
                       FROM queen.consumer_cursors c WHERE c.partition_id = p.id) lc ON true
    LEFT JOIN LATERAL (SELECT count(*) AS n FROM queen.dead_letters d WHERE d.partition_id = p.id) dl ON true
    CROSS JOIN LATERAL (SELECT coalesce(fs.base_offset - 1, p.last_offset) AS gone) g
    CROSS JOIN LATERAL (SELECT p.last_offset - greatest(coalesce(rc.cursor_offset, 0), g.gone) AS after) a
    CROSS JOIN LATERAL (SELECT CASE WHEN rc.live THEN least(greatest(rc.delivered_to - rc.cursor_offset, 0), a.after) ELSE 0 END AS processing) w
    LEFT JOIN LATERAL (SELECT s.created_at FROM queen.log_segments s
                       WHERE a.after > 0 AND s.partition_id = p.id AND s.end_offset > greatest(coalesce(rc.cursor_offset, 0), g.gone)
                       ORDER BY s.end_offset LIMIT 1) pa ON true
