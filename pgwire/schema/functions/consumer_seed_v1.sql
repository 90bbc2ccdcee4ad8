-- consumer_seed_v1: where a group's cursor starts on a partition it has no
-- cursor row for yet, by its subscription (consumer_subscriptions): after
-- the last segment committed at or before start_after ('new', 'from'), or
-- from the beginning ('all', or no subscription). consumer_pop_v1 seeds a
-- missing row by the same rule; the JetStream consumers' statements
-- (pgwire/js_read.go, pgwire/js_acks.go) read it where no row is yet.
-- One SELECT, so PostgreSQL inlines it into its caller.

CREATE OR REPLACE FUNCTION queen.consumer_seed_v1(p_pid bigint, p_qid bigint, p_group text) RETURNS bigint
LANGUAGE sql STABLE
AS $$
    SELECT coalesce((
        SELECT y.end_offset FROM queen.consumer_subscriptions s
        CROSS JOIN LATERAL (SELECT x.end_offset FROM queen.log_segments x
                            WHERE x.partition_id = p_pid AND x.created_at <= s.start_after
                            ORDER BY x.end_offset DESC LIMIT 1) y
        WHERE s.queue_id = p_qid AND s.consumer_group = p_group AND s.start_after IS NOT NULL), 0)
$$;
