-- Retention: one bounded step, called periodically by every bridge.
--
-- Queues with retention_seconds > 0 lose segments older than that, and
-- log_txns rows older than greatest(retention_seconds, dedup_window_seconds):
-- a transaction row outlives its segment for the deduplication window, so a
-- repeat of a removed original is still a duplicate (answered with the zero
-- id) rather than written again. txns_start follows the oldest remaining
-- log_txns row, which keeps the dedup probe's offset range tight.
--
-- The step takes the partition row locks of at most p_max_partitions
-- partitions, in ascending log_partitions.id (the global lock order shared
-- with log_push_multi_v1), and deletes at most p_batch segments and p_batch
-- transaction rows per partition, so a push waits for it briefly at most.
CREATE OR REPLACE FUNCTION queen.log_retention_step_v1(p_max_partitions integer, p_batch integer,
    OUT o_partitions integer, OUT o_segments bigint, OUT o_txns bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    n bigint;
BEGIN
    o_partitions := 0; o_segments := 0; o_txns := 0;
    FOR r IN
        SELECT p.id,
               make_interval(secs => q.retention_seconds) AS keep_segments,
               make_interval(secs => greatest(q.retention_seconds, q.dedup_window_seconds)) AS keep_txns
        FROM queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE q.retention_seconds > 0
          AND ((SELECT s.created_at FROM queen.log_segments s WHERE s.partition_id = p.id ORDER BY s.end_offset LIMIT 1)
                   < clock_timestamp() - make_interval(secs => q.retention_seconds)
               OR (SELECT t.created_at FROM queen.log_txns t WHERE t.partition_id = p.id ORDER BY t.end_offset LIMIT 1)
                   < clock_timestamp() - make_interval(secs => greatest(q.retention_seconds, q.dedup_window_seconds)))
        ORDER BY p.id
        LIMIT p_max_partitions
        FOR UPDATE OF p
    LOOP
        DELETE FROM queen.log_segments s
        WHERE s.partition_id = r.id AND s.end_offset IN (
            SELECT x.end_offset FROM queen.log_segments x
            WHERE x.partition_id = r.id AND x.created_at < clock_timestamp() - r.keep_segments
            ORDER BY x.end_offset LIMIT p_batch);
        GET DIAGNOSTICS n = ROW_COUNT;
        o_segments := o_segments + n;

        DELETE FROM queen.log_txns t
        WHERE t.partition_id = r.id AND t.end_offset IN (
            SELECT x.end_offset FROM queen.log_txns x
            WHERE x.partition_id = r.id AND x.created_at < clock_timestamp() - r.keep_txns
            ORDER BY x.end_offset LIMIT p_batch);
        GET DIAGNOSTICS n = ROW_COUNT;
        o_txns := o_txns + n;
        IF n > 0 THEN
            UPDATE queen.log_partitions p SET txns_start = coalesce(
                (SELECT t.base_offset FROM queen.log_txns t WHERE t.partition_id = r.id ORDER BY t.end_offset LIMIT 1),
                p.last_offset + 1)
            WHERE p.id = r.id;
        END IF;
        o_partitions := o_partitions + 1;
    END LOOP;
END
$$;
