WITH RECURSIVE v AS (
    SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[]) AS v(pid, lo, hi, need)
), walk AS (
    SELECT v.pid, v.lo, v.hi, v.need, s.base_offset, s.end_offset, s.created_at, k.n, k.n AS run
    FROM v CROSS JOIN LATERAL (
        SELECT x.base_offset, x.end_offset, x.created_at FROM queen.log_segments x
        WHERE x.partition_id = v.pid AND x.end_offset >= v.hi ORDER BY x.end_offset LIMIT 1) s
    CROSS JOIN LATERAL (SELECT CASE WHEN s.created_at BETWEEN $5 AND $6
                                    THEN least(s.end_offset, v.hi) - greatest(s.base_offset - 1, v.lo) ELSE 0 END AS n) k
    WHERE v.hi > v.lo AND s.base_offset <= v.hi
  UNION ALL
    SELECT w.pid, w.lo, w.hi, w.need, s.base_offset, s.end_offset, s.created_at, k.n, w.run + k.n
    FROM walk w CROSS JOIN LATERAL (
        SELECT x.base_offset, x.end_offset, x.created_at FROM queen.log_segments x
        WHERE x.partition_id = w.pid AND x.end_offset = w.base_offset - 1) s
    CROSS JOIN LATERAL (SELECT CASE WHEN s.created_at BETWEEN $5 AND $6
                                    THEN least(s.end_offset, w.hi) - greatest(s.base_offset - 1, w.lo) ELSE 0 END AS n) k
    WHERE w.base_offset - 1 > w.lo AND w.created_at >= $5 AND w.run < w.need
), pick AS (
    SELECT w.*, sum(w.n) OVER (ORDER BY w.created_at DESC, w.pid, w.end_offset DESC) AS total
    FROM walk w WHERE w.n > 0
)
SELECT p.pid, p.lo, p.hi, p.base_offset, p.created_at, s.payload,
       array(SELECT t.message_offset FROM queen.log_tombstones t
             WHERE t.partition_id = p.pid AND t.message_offset BETWEEN p.base_offset AND p.end_offset ORDER BY 1),
       array(SELECT DISTINCT d.message_offset FROM queen.dead_letters d
             WHERE d.partition_id = p.pid AND d.message_offset BETWEEN p.base_offset AND p.end_offset ORDER BY 1)
FROM pick p JOIN queen.log_segments s ON s.partition_id = p.pid AND s.end_offset = p.end_offset
WHERE p.total - p.n < $7
ORDER BY p.created_at DESC, p.pid, p.end_offset DESC
