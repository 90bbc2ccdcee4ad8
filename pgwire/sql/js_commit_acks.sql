/* queen:js-acks */ WITH v AS (
    SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int4[], $5::int4[], $6::int4[], $7::int4[], $16::int8[])
        WITH ORDINALITY AS v(cid, pid, floor, af, an, df, dn, dto, ord)
), j AS MATERIALIZED (
    SELECT j.id, j.name, j.queue_id FROM queen.jetstream_consumers j
    WHERE j.id = ANY ($1::int8[])
    ORDER BY j.id
    FOR KEY SHARE
), k AS MATERIALIZED (
    SELECT v.*, j.name AS grp, j.queue_id AS qid
    FROM v JOIN j ON j.id = v.cid
    JOIN queen.log_partitions p ON p.id = v.pid AND p.queue_id = j.queue_id
), u AS (
    INSERT INTO queen.consumer_cursors AS c (partition_id, consumer_group, cursor_offset, delivered_to, start_offset,
        acked_above, delivery_offsets, delivery_counts)
    SELECT k.pid, k.grp, k.floor, k.dto,
           CASE WHEN NOT EXISTS (SELECT 1 FROM queen.consumer_cursors x WHERE x.partition_id = k.pid AND x.consumer_group = k.grp)
                THEN queen.consumer_seed_v1(k.pid, k.qid, k.grp) END,
           CASE WHEN k.an > 0 THEN ($8::int8[])[k.af + 1 : k.af + k.an] END,
           CASE WHEN k.dn > 0 THEN ($9::int8[])[k.df + 1 : k.df + k.dn] END,
           CASE WHEN k.dn > 0 THEN ($10::int4[])[k.df + 1 : k.df + k.dn] END
    FROM k
    ORDER BY k.pid, k.grp
    ON CONFLICT (partition_id, consumer_group) DO UPDATE SET
        cursor_offset = CASE WHEN c.cursor_offset <= EXCLUDED.cursor_offset
                    AND (c.acked_above IS NULL OR c.acked_above[cardinality(c.acked_above)] <= EXCLUDED.cursor_offset
                         OR c.acked_above <@ EXCLUDED.acked_above)
                    AND (c.delivery_offsets IS NULL OR c.delivery_offsets[cardinality(c.delivery_offsets)] <= EXCLUDED.cursor_offset) THEN EXCLUDED.cursor_offset ELSE (queen.consumer_acks_merge_v1(c.cursor_offset, c.acked_above, c.delivery_offsets, c.delivery_counts,
                EXCLUDED.cursor_offset, EXCLUDED.acked_above, EXCLUDED.delivery_offsets, EXCLUDED.delivery_counts)).o_floor END,
        acked_above = CASE WHEN c.cursor_offset <= EXCLUDED.cursor_offset
                    AND (c.acked_above IS NULL OR c.acked_above[cardinality(c.acked_above)] <= EXCLUDED.cursor_offset
                         OR c.acked_above <@ EXCLUDED.acked_above)
                    AND (c.delivery_offsets IS NULL OR c.delivery_offsets[cardinality(c.delivery_offsets)] <= EXCLUDED.cursor_offset) THEN EXCLUDED.acked_above ELSE (queen.consumer_acks_merge_v1(c.cursor_offset, c.acked_above, c.delivery_offsets, c.delivery_counts,
                EXCLUDED.cursor_offset, EXCLUDED.acked_above, EXCLUDED.delivery_offsets, EXCLUDED.delivery_counts)).o_acked END,
        delivery_offsets = CASE WHEN c.cursor_offset <= EXCLUDED.cursor_offset
                    AND (c.acked_above IS NULL OR c.acked_above[cardinality(c.acked_above)] <= EXCLUDED.cursor_offset
                         OR c.acked_above <@ EXCLUDED.acked_above)
                    AND (c.delivery_offsets IS NULL OR c.delivery_offsets[cardinality(c.delivery_offsets)] <= EXCLUDED.cursor_offset) THEN EXCLUDED.delivery_offsets ELSE (queen.consumer_acks_merge_v1(c.cursor_offset, c.acked_above, c.delivery_offsets, c.delivery_counts,
                EXCLUDED.cursor_offset, EXCLUDED.acked_above, EXCLUDED.delivery_offsets, EXCLUDED.delivery_counts)).o_offsets END,
        delivery_counts = CASE WHEN c.cursor_offset <= EXCLUDED.cursor_offset
                    AND (c.acked_above IS NULL OR c.acked_above[cardinality(c.acked_above)] <= EXCLUDED.cursor_offset
                         OR c.acked_above <@ EXCLUDED.acked_above)
                    AND (c.delivery_offsets IS NULL OR c.delivery_offsets[cardinality(c.delivery_offsets)] <= EXCLUDED.cursor_offset) THEN EXCLUDED.delivery_counts ELSE (queen.consumer_acks_merge_v1(c.cursor_offset, c.acked_above, c.delivery_offsets, c.delivery_counts,
                EXCLUDED.cursor_offset, EXCLUDED.acked_above, EXCLUDED.delivery_offsets, EXCLUDED.delivery_counts)).o_counts END,
        updated_at = clock_timestamp(),
        delivered_to = greatest(c.delivered_to, EXCLUDED.delivered_to)
    RETURNING c.partition_id
), dl AS (
    INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, message_offset, transaction_id, error_message, retry_count)
    SELECT k.qid, k.pid, k.grp, d.off, d.txid, nullif(d.err, ''), d.retries
    FROM unnest($11::int4[], $12::int8[], $13::text[], $14::text[], $15::int4[]) AS d(row, off, txid, err, retries)
    JOIN k ON k.ord = d.row
    ORDER BY k.pid, k.grp, d.off
    ON CONFLICT (partition_id, consumer_group, message_offset) DO NOTHING
)
SELECT count(*) FROM u
