-- The row the bridge updates now and then to measure how long a commit's
-- flush takes (pgwire.FlushLatency), from which fusion sets how many bundles
-- may be in flight.
INSERT INTO queen.system_state (key, value) VALUES ('flush_probe', '0') ON CONFLICT (key) DO NOTHING;

-- log_retention_step_v1 as migration 0006 defined it (segments that carry
-- their own hash blob), now answering at once when no queue has a
-- retention. A segment older than the retention but not
-- older than greatest(retention, dedup window) leaves its hash blob in
-- log_txns as it goes, so a repeat of one of its transactionIds is still a
-- duplicate (answered with the zero id) rather than written again. txns_start
-- follows the oldest hash blob left in either table. The lock order is
-- unchanged: at most p_max_partitions partition rows, ascending id.
CREATE OR REPLACE FUNCTION queen.log_retention_step_v1(p_max_partitions integer, p_batch integer,
    OUT o_partitions integer, OUT o_segments bigint, OUT o_txns bigint)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
    r       record;
    n       bigint;
    removed bigint;
BEGIN
    o_partitions := 0; o_segments := 0; o_txns := 0;
    -- Without a queue that keeps its messages for a while, there is nothing
    -- to look for; the query below would walk every partition (in id order,
    -- for its LIMIT) to find that out, on every tick of every bridge.
    IF NOT EXISTS (SELECT 1 FROM queen.queues WHERE retention_seconds > 0) THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT p.id,
               clock_timestamp() - make_interval(secs => q.retention_seconds) AS segments_before,
               clock_timestamp() - make_interval(secs => greatest(q.retention_seconds, q.dedup_window_seconds)) AS txns_before
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
        WITH gone AS (
            DELETE FROM queen.log_segments s
            WHERE s.partition_id = r.id AND s.end_offset IN (
                SELECT x.end_offset FROM queen.log_segments x
                WHERE x.partition_id = r.id AND x.created_at < r.segments_before
                ORDER BY x.end_offset LIMIT p_batch)
            RETURNING s.partition_id, s.end_offset, s.base_offset, s.created_at, s.hashes
        ), kept AS (
            INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)
            SELECT g.partition_id, g.end_offset, g.base_offset, g.created_at, g.hashes FROM gone g
            WHERE g.hashes IS NOT NULL AND g.created_at >= r.txns_before
        )
        SELECT count(*) INTO n FROM gone;
        o_segments := o_segments + n;
        removed := n;

        DELETE FROM queen.log_txns t
        WHERE t.partition_id = r.id AND t.end_offset IN (
            SELECT x.end_offset FROM queen.log_txns x
            WHERE x.partition_id = r.id AND x.created_at < r.txns_before
            ORDER BY x.end_offset LIMIT p_batch);
        GET DIAGNOSTICS n = ROW_COUNT;
        o_txns := o_txns + n;
        removed := removed + n;
        IF removed > 0 THEN
            UPDATE queen.log_partitions p SET txns_start = coalesce(least(
                (SELECT t.base_offset FROM queen.log_txns t WHERE t.partition_id = r.id ORDER BY t.end_offset LIMIT 1),
                (SELECT s.base_offset FROM queen.log_segments s WHERE s.partition_id = r.id ORDER BY s.end_offset LIMIT 1)),
                p.last_offset + 1)
            WHERE p.id = r.id;
        END IF;
        o_partitions := o_partitions + 1;
    END LOOP;
END
$$;
