-- log_retention_step_v1: one bounded retention step, called periodically by
-- every bridge (pgwire.RetentionStep).
--
-- Queues with retention_seconds > 0 lose segments older than that. A segment
-- older than the retention but not older than greatest(retention, dedup
-- window) leaves its hash blob in log_txns as it goes, so a repeat of one of
-- its transactionIds is still a duplicate (answered with the zero id) rather
-- than written again; log_txns rows older than greatest(retention_seconds,
-- dedup_window_seconds) go. txns_start follows the oldest hash blob left in
-- either table, which keeps the dedup probe's offset range tight. The
-- tombstones of removed offsets go with their segments (migration 0012).
--
-- For queues with the option retainUnconsumed (other_options, true), a
-- segment is removed only once every group that reads the queue has
-- acknowledged past its end (consumer_floor_v1). Without the option, a
-- cursor that retention passed skips ahead: pops read the segments after it
-- that are left.
--
-- Eviction: a queue with the options retentionEnabled (true) and
-- maxWaitTimeSeconds (> 0) also loses every segment older than
-- maxWaitTimeSeconds, whatever the cursors and retainUnconsumed: a message
-- no group consumed within that time is gone for every group. Cursors are
-- not touched: a cursor behind an evicted range skips it as it skips what
-- retention removed (a pop reads the segments after it that are left).
-- Dead letters are rows of their own and stay; their data reads back null,
-- as after retention. A queue's keep_s is the shorter of its retention and
-- its eviction time, whichever are set; its hash blobs stay in log_txns
-- for greatest(keep_s, dedup window), as for retention alone.
--
-- Without a queue that keeps its messages for a while it answers at once:
-- the partition query would walk every partition (in id order, for its
-- LIMIT) to find that out, on every tick of every bridge.
--
-- The step takes the partition row locks of at most p_max_partitions
-- partitions, in ascending log_partitions.id (the global lock order shared
-- with log_push_multi_v2), and deletes at most p_batch segments and p_batch
-- transaction rows per partition, so a push waits for it briefly at most.
-- Consumer rows are only read, never locked, here.

CREATE OR REPLACE FUNCTION queen.log_retention_step_v1(p_max_partitions integer, p_batch integer,
    OUT o_partitions integer, OUT o_segments bigint, OUT o_txns bigint)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
    r       record;
    n       bigint;
    removed bigint;
    upto    bigint;
BEGIN
    o_partitions := 0; o_segments := 0; o_txns := 0;
    IF NOT EXISTS (SELECT 1 FROM queen.queues WHERE retention_seconds > 0
                   OR (other_options -> 'retentionEnabled' = 'true'::jsonb AND other_options ? 'maxWaitTimeSeconds')) THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT p.id,
               CASE WHEN q.retention_seconds > 0 THEN clock_timestamp() - make_interval(secs => q.retention_seconds) END AS segments_before,
               CASE WHEN e.evict_s > 0 THEN clock_timestamp() - make_interval(secs => e.evict_s) END AS evict_before,
               clock_timestamp() - make_interval(secs => greatest(k.keep_s, q.dedup_window_seconds)) AS txns_before,
               CASE WHEN q.other_options -> 'retainUnconsumed' = 'true'::jsonb THEN queen.consumer_floor_v1(p.id, q.id)
                    ELSE 9223372036854775807 END AS floor
        FROM queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id
        CROSS JOIN LATERAL (SELECT CASE WHEN q.other_options -> 'retentionEnabled' = 'true'::jsonb
                                        THEN queen.consumer_option_v2(q.other_options, 'maxWaitTimeSeconds') ELSE 0 END AS evict_s) e
        CROSS JOIN LATERAL (SELECT CASE WHEN q.retention_seconds > 0 AND e.evict_s > 0 THEN least(q.retention_seconds, e.evict_s)
                                        ELSE greatest(q.retention_seconds, e.evict_s) END AS keep_s) k
        WHERE k.keep_s > 0
          AND ((q.retention_seconds > 0 AND (SELECT s.created_at FROM queen.log_segments s WHERE s.partition_id = p.id
                  AND (q.other_options -> 'retainUnconsumed' IS DISTINCT FROM 'true'::jsonb
                       OR s.end_offset <= queen.consumer_floor_v1(p.id, q.id))
                ORDER BY s.end_offset LIMIT 1)
                   < clock_timestamp() - make_interval(secs => q.retention_seconds))
               OR (e.evict_s > 0 AND (SELECT s.created_at FROM queen.log_segments s WHERE s.partition_id = p.id
                ORDER BY s.end_offset LIMIT 1)
                   < clock_timestamp() - make_interval(secs => e.evict_s))
               OR (SELECT t.created_at FROM queen.log_txns t WHERE t.partition_id = p.id ORDER BY t.end_offset LIMIT 1)
                   < clock_timestamp() - make_interval(secs => greatest(k.keep_s, q.dedup_window_seconds)))
        ORDER BY p.id
        LIMIT p_max_partitions
        FOR UPDATE OF p
    LOOP
        WITH gone AS (
            DELETE FROM queen.log_segments s
            WHERE s.partition_id = r.id AND s.end_offset IN (
                SELECT x.end_offset FROM queen.log_segments x
                WHERE x.partition_id = r.id
                  AND (x.created_at < r.segments_before AND x.end_offset <= r.floor OR x.created_at < r.evict_before)
                ORDER BY x.end_offset LIMIT p_batch)
            RETURNING s.partition_id, s.end_offset, s.base_offset, s.created_at, s.hashes
        ), kept AS (
            INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)
            SELECT g.partition_id, g.end_offset, g.base_offset, g.created_at, g.hashes FROM gone g
            WHERE g.hashes IS NOT NULL AND g.created_at >= r.txns_before
        )
        SELECT count(*), max(g.end_offset) INTO n, upto FROM gone g;
        o_segments := o_segments + n;
        removed := n;
        IF upto IS NOT NULL THEN
            DELETE FROM queen.log_tombstones t WHERE t.partition_id = r.id AND t.message_offset <= upto;
        END IF;

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
