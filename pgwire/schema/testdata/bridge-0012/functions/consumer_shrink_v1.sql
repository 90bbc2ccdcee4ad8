-- consumer_shrink_v1: a pop delivered less than consumer_pop_v1 recorded
-- (its answer would have been larger than the transport carries): what it
-- delivered ends at p_to, p_n messages. Only while nothing moved since: the
-- same lease (or, with auto-ack, the cursor still where the pop left it).
-- The delivery's hash entries are cleared (its acknowledgements take the general
-- path). Answers whether it applied.

CREATE OR REPLACE FUNCTION queen.consumer_shrink_v1(p_pid bigint, p_group text, p_lease uuid, p_old_to bigint, p_to bigint, p_n integer)
RETURNS boolean
LANGUAGE sql
AS $$
    WITH s AS (
        UPDATE queen.consumer_cursors c SET
            delivered_to = p_to, delivered_count = p_n, delivered_hashes = NULL,
            cursor_offset = CASE WHEN p_lease IS NULL THEN p_to ELSE c.cursor_offset END,
            acked_count = CASE WHEN p_lease IS NULL THEN p_n ELSE c.acked_count END,
            updated_at = clock_timestamp()
        WHERE c.partition_id = p_pid AND c.consumer_group = p_group AND c.delivered_to = p_old_to
          AND (CASE WHEN p_lease IS NULL THEN c.lease_id IS NULL AND c.cursor_offset = p_old_to ELSE c.lease_id = p_lease END)
        RETURNING 1
    )
    SELECT count(*) = 1 FROM s
$$;
