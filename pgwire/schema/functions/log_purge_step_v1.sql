-- log_purge_step_v1: one bounded step of removing what deleted queues left
-- (log_purges, filled by queue_delete_v1), called with the retention ticks
-- of every bridge and by the delete itself (pgwire.PurgeStep).
--
-- It takes at most p_max_partitions purge rows, ascending partition id,
-- skipping those another bridge is purging right now, and deletes at most
-- p_batch segments and p_batch hash blobs of each. A partition whose rows
-- are all gone also loses what a claim, an acknowledgement or a pop's
-- subscription wrote while the delete was running (rows the delete could
-- not see yet: cursor rows, dead letters, subscriptions, JetStream
-- consumers), its tombstones, and its purge row.
--
-- No partition or consumer row is locked here: the partitions are gone,
-- and nothing else reaches these rows.
--
-- o_partitions: purge rows looked at; o_rows: rows deleted; o_done:
-- partitions finished.

CREATE OR REPLACE FUNCTION queen.log_purge_step_v1(p_max_partitions integer, p_batch integer,
    OUT o_partitions integer, OUT o_rows bigint, OUT o_done integer)
LANGUAGE plpgsql
SET enable_seqscan = off
AS $$
DECLARE
    r    record;
    segs bigint;
    txns bigint;
BEGIN
    o_partitions := 0; o_rows := 0; o_done := 0;
    FOR r IN
        SELECT g.partition_id, g.queue_id FROM queen.log_purges g
        ORDER BY g.partition_id
        LIMIT p_max_partitions
        FOR UPDATE SKIP LOCKED
    LOOP
        o_partitions := o_partitions + 1;
        DELETE FROM queen.log_segments s
        WHERE s.partition_id = r.partition_id AND s.end_offset IN (
            SELECT x.end_offset FROM queen.log_segments x
            WHERE x.partition_id = r.partition_id
            ORDER BY x.end_offset LIMIT p_batch);
        GET DIAGNOSTICS segs = ROW_COUNT;
        DELETE FROM queen.log_txns t
        WHERE t.partition_id = r.partition_id AND t.end_offset IN (
            SELECT x.end_offset FROM queen.log_txns x
            WHERE x.partition_id = r.partition_id
            ORDER BY x.end_offset LIMIT p_batch);
        GET DIAGNOSTICS txns = ROW_COUNT;
        o_rows := o_rows + segs + txns;
        CONTINUE WHEN segs >= p_batch OR txns >= p_batch;

        DELETE FROM queen.consumer_cursors c WHERE c.partition_id = r.partition_id;
        DELETE FROM queen.dead_letters d WHERE d.queue_id = r.queue_id;
        DELETE FROM queen.consumer_subscriptions s WHERE s.queue_id = r.queue_id;
        DELETE FROM queen.jetstream_consumers j WHERE j.queue_id = r.queue_id;
        -- Tombstones (one row per deleted message) go with their partition.
        DELETE FROM queen.log_tombstones t WHERE t.partition_id = r.partition_id;
        DELETE FROM queen.log_purges g WHERE g.partition_id = r.partition_id;
        o_done := o_done + 1;
    END LOOP;
END
$$;
