WITH a AS (
    UPDATE queen.log_partitions p SET
        last_offset   = p.last_offset + $3,
        last_write_at = CASE WHEN clock_timestamp() - p.last_write_at > interval '1 second'
                             THEN clock_timestamp() ELSE p.last_write_at END
    WHERE p.id = $1 AND p.queue_id = $6 AND p.name = $7 AND $3 >= 1 AND octet_length($4::bytea) = 16 * $3
      AND p.dedup_window_seconds IS NOT NULL AND p.last_offset <= greatest($2, p.txns_start - 1)
    RETURNING p.id, p.last_offset - $3 + 1 AS base, p.last_offset AS last, p.dedup_window_seconds AS win,
              clock_timestamp() AS ts
), s AS (
    INSERT INTO queen.log_segments (partition_id, end_offset, base_offset, msg_count, created_at, payload, hashes)
    SELECT a.id, a.last, a.base, $3, a.ts, $5::bytea, $4::bytea FROM a
)
SELECT 1::int8, a.id, a.base, a.ts, a.win FROM a
