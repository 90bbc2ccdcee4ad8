/* queen:ack */ WITH v AS (
    SELECT * FROM unnest($1::uuid[], $2::int8[], $3::text[], $4::uuid[], $5::int4[], $6::bytea[], $7::bytea[], $8::text[], $9::int4[])
        WITH ORDINALITY AS v(tenant, pid, grp, lease, n, hashes, digest, status, first, ord)
), l AS (
    SELECT v.ord, v.status, v.first, c.partition_id, c.consumer_group, c.delivered_to, c.delivered_count, c.retry_count,
           q.id AS qid, q.name AS qname, p.name AS pname,
           queen.consumer_option_v2(q.other_options, 'retryLimit') AS lim
    FROM v JOIN queen.consumer_cursors c ON c.partition_id = v.pid AND c.consumer_group = v.grp
    JOIN queen.log_partitions p ON p.id = v.pid
    JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = v.tenant
    WHERE c.lease_id = v.lease AND c.lease_expires_at > clock_timestamp() AND c.acked_count = 0
      AND c.delivered_count = v.n AND c.delivered_hashes IN (v.digest, v.hashes) AND c.delivered_to - c.cursor_offset = v.n
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c
), o AS (
    SELECT l.*, l.status IN ('completed', 'dlq') OR (l.status = 'failed' AND l.retry_count >= l.lim) AS moves,
           l.status = 'dlq' OR (l.status = 'failed' AND l.retry_count >= l.lim) AS dead
    FROM l
), u AS (
    UPDATE queen.consumer_cursors c SET
        cursor_offset    = CASE WHEN o.moves THEN o.delivered_to ELSE c.cursor_offset END,
        acked_count      = CASE WHEN o.moves THEN o.delivered_count ELSE c.acked_count END,
        retry_count      = CASE WHEN o.status = 'failed' AND NOT o.moves THEN c.retry_count + 1
                                WHEN o.status = 'retry' THEN c.retry_count ELSE 0 END,
        lease_id         = NULL,
        lease_expires_at = NULL,
        updated_at       = clock_timestamp()
    FROM o
    WHERE c.partition_id = o.partition_id AND c.consumer_group = o.consumer_group
    RETURNING o.ord, c.cursor_offset, o.dead, o.qname, o.pname
)
