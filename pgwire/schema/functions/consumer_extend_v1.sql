-- consumer_extend_v1: a lease's expiry becomes max(current, now + seconds)
-- on every partition it holds (one pop's lease may hold several), only
-- while it has not expired. The rows are locked in ascending
-- (partition_id, consumer_group). No row: unknown or expired.

CREATE OR REPLACE FUNCTION queen.consumer_extend_v1(p_tenant uuid, p_lease uuid, p_seconds integer) RETURNS timestamptz
LANGUAGE sql
SET plan_cache_mode = force_generic_plan
AS $$
    WITH held AS (
        SELECT c.partition_id, c.consumer_group FROM queen.consumer_cursors c
        JOIN queen.log_partitions p ON p.id = c.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.lease_id = p_lease AND c.lease_expires_at > clock_timestamp() AND q.tenant = p_tenant
        ORDER BY c.partition_id, c.consumer_group
        FOR UPDATE OF c
    ), ext AS (
        UPDATE queen.consumer_cursors c SET
            lease_expires_at = greatest(c.lease_expires_at, clock_timestamp() + queen.consumer_duration_v1(p_seconds)),
            updated_at = clock_timestamp()
        FROM held h
        WHERE c.partition_id = h.partition_id AND c.consumer_group = h.consumer_group
        RETURNING c.lease_expires_at
    )
    SELECT max(lease_expires_at) FROM ext
$$;
