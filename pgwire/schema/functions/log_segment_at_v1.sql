-- log_segment_at_v1 returns the segment of partition p_pid that covers offset
-- p_off, or no row when retention removed it. Called by pgwire.SegmentAt
-- (duplicate resolution).

CREATE OR REPLACE FUNCTION queen.log_segment_at_v1(p_pid bigint, p_off bigint)
RETURNS TABLE (base_offset bigint, msg_count integer, created_at timestamptz, payload bytea)
LANGUAGE sql STABLE AS $$
    SELECT s.base_offset, s.msg_count, s.created_at, s.payload
    FROM queen.log_segments s
    WHERE s.partition_id = p_pid AND s.end_offset >= p_off AND s.base_offset <= p_off
    ORDER BY s.end_offset
    LIMIT 1
$$;
