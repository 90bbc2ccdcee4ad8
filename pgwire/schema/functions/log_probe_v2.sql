-- log_probe_v2 looks for incoming hashes among the frames stored in
-- (p_lo, p_hi] of a partition no older than p_since, in both places a hash
-- blob can be: the segment rows (from migration 0006 on) and log_txns
-- (segments written before it, and hash blobs that outlive a removed segment
-- for the deduplication window). It answers
-- [{"i": incoming index, "off": original offset}, ...] or NULL.
--
-- The offset range bounds both index scans; the time cap only filters. The
-- join must be a hash join: a merge join sorts every stored frame in the
-- range. The planner is told so here, on this function alone, which only runs
-- when the range is non-empty. JIT is off: its compile time (~200 ms here)
-- dwarfs any probe this runs. Called by log_push_multi_v2 only.

CREATE OR REPLACE FUNCTION queen.log_probe_v2(
    p_pid bigint, p_lo bigint, p_hi bigint, p_since timestamptz,
    p_hashes bytea, p_count integer
) RETURNS jsonb
LANGUAGE sql STABLE
SET enable_mergejoin = off
SET enable_hashjoin = on
SET jit = off
AS $$
    SELECT jsonb_agg(jsonb_build_object('i', d.i, 'off', d.off) ORDER BY d.i)
    FROM (
        SELECT inc.k AS i, min(st.off) AS off
        FROM (
            SELECT t.base_offset + s.j AS off,
                   substring(t.hashes FROM (s.j * 16 + 1)::integer FOR 16) AS h
            FROM (SELECT x.base_offset, x.end_offset, x.hashes FROM queen.log_segments x
                  WHERE x.partition_id = p_pid AND x.end_offset > p_lo AND x.base_offset <= p_hi
                    AND x.created_at >= p_since AND x.hashes IS NOT NULL
                  UNION ALL
                  SELECT x.base_offset, x.end_offset, x.hashes FROM queen.log_txns x
                  WHERE x.partition_id = p_pid AND x.end_offset > p_lo AND x.base_offset <= p_hi
                    AND x.created_at >= p_since) t,
                 generate_series(greatest(0, p_lo + 1 - t.base_offset),
                                 least(t.end_offset, p_hi) - t.base_offset) AS s(j)
        ) st
        JOIN (
            SELECT k, substring(p_hashes FROM k * 16 + 1 FOR 16) AS h
            FROM generate_series(0, p_count - 1) AS k
        ) inc ON inc.h = st.h
        GROUP BY inc.k
    ) d
$$;
