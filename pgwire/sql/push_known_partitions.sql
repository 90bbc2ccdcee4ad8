WITH u AS (
    SELECT * FROM unnest($1::int8[], $2::int8[], $3::int4[], $4::bytea[], $5::bytea[], $6::int8[], $7::text[])
        WITH ORDINALITY AS u(pid, ver, n, h, b, qid, pn, ord)
    ORDER BY pid
), a AS (
    UPDATE queen.log_partitions p SET
        last_offset   = p.last_offset + u.n,
        last_write_at = CASE WHEN clock_timestamp() - p.last_write_at > interval '1 second'
                             THEN clock_timestamp() ELSE p.last_write_at END
    FROM u
    WHERE p.id = u.pid AND p.queue_id = u.qid AND p.name = u.pn AND u.n >= 1 AND octet_length(u.h) = 16 * u.n
      AND p.dedup_window_seconds IS NOT NULL AND p.last_offset <= greatest(u.ver, p.txns_start - 1)
    RETURNING u.ord, p.id, p.last_offset - u.n + 1 AS base, p.last_offset AS last, u.n, u.h, u.b,
              p.dedup_window_seconds AS win, clock_timestamp() AS at
), s AS (
    INSERT INTO queen.log_segments (partition_id, end_offset, base_offset, msg_count, created_at, payload, hashes)
    SELECT a.id, a.last, a.base, a.n, (SELECT max(at) FROM a), a.b, a.h FROM a
)
SELECT a.ord, a.id, a.base, (SELECT max(at) FROM a), a.win FROM a
