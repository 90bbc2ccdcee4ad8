-- consumer_floor_v1: the highest offset retention may remove from a
-- partition of a queue that keeps what its groups have not consumed
-- (retainUnconsumed): the lowest cursor of the groups that read the
-- queue, 0 while one of them has no cursor on this partition yet; with no
-- group at all, no limit. Called by log_retention_step_v1.

CREATE OR REPLACE FUNCTION queen.consumer_floor_v1(p_pid bigint, p_qid bigint) RETURNS bigint
LANGUAGE sql STABLE
SET enable_seqscan = off
AS $$
    SELECT CASE
        WHEN EXISTS (SELECT 1 FROM queen.consumer_subscriptions s
                     WHERE s.queue_id = p_qid
                       AND NOT EXISTS (SELECT 1 FROM queen.consumer_cursors c
                                       WHERE c.partition_id = p_pid AND c.consumer_group = s.consumer_group)) THEN 0
        ELSE coalesce((SELECT min(c.cursor_offset) FROM queen.consumer_cursors c WHERE c.partition_id = p_pid),
                      9223372036854775807) END
$$;
