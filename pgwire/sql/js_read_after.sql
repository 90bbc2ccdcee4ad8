/* queen:js-read */ SELECT r.ord, s.base_offset, s.created_at, s.payload, u.gone
FROM unnest($1::int8[], $2::int8[], $3::int4[], $4::int8[]) WITH ORDINALITY AS r(pid, after, lim, maxb, ord)
CROSS JOIN LATERAL (
    SELECT f.base_offset FROM queen.log_segments f
    WHERE f.partition_id = r.pid AND f.end_offset > r.after
    ORDER BY f.end_offset
    LIMIT 1
) f
CROSS JOIN LATERAL (
    SELECT coalesce((SELECT l.end_offset FROM queen.log_segments l
                     WHERE l.partition_id = r.pid AND l.end_offset >= greatest(r.after, f.base_offset - 1) + r.lim
                     ORDER BY l.end_offset
                     LIMIT 1), 9223372036854775807) AS upto
) u0
CROSS JOIN LATERAL (
    SELECT u0.upto, array(SELECT t.message_offset FROM queen.log_tombstones t
                          WHERE t.partition_id = r.pid AND t.message_offset > r.after AND t.message_offset <= u0.upto
                          ORDER BY t.message_offset) AS gone
    OFFSET 0 -- once per range, not pulled up into every segment row
) u
CROSS JOIN LATERAL (
    SELECT w.base_offset, w.end_offset, w.created_at, w.payload FROM (
        SELECT x.base_offset, x.end_offset, x.created_at, x.payload,
               x.end_offset - greatest(x.base_offset - 1, r.after) AS n,
               sum(x.end_offset - greatest(x.base_offset - 1, r.after)) OVER (ORDER BY x.end_offset) AS run,
               octet_length(x.payload) AS b,
               sum(octet_length(x.payload)) OVER (ORDER BY x.end_offset) AS bytes
        FROM queen.log_segments x
        WHERE x.partition_id = r.pid AND x.end_offset > r.after AND x.end_offset <= u.upto
        ORDER BY x.end_offset
        LIMIT r.lim
    ) w
    WHERE w.run - w.n < r.lim AND (r.maxb <= 0 OR w.bytes - w.b < r.maxb)
) s
ORDER BY r.ord, s.end_offset
