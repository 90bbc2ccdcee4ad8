, dl AS (
    INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, message_offset, transaction_id, error_message, retry_count)
    SELECT o.qid, o.partition_id, o.consumer_group, o.delivered_to - o.delivered_count + i.i,
           ($10::text[])[o.first + i.i], nullif(($11::text[])[o.first + i.i], ''), o.retry_count
    FROM o CROSS JOIN LATERAL generate_series(1, o.delivered_count) AS i(i)
    WHERE o.dead
    ORDER BY o.partition_id, o.consumer_group, i.i
    ON CONFLICT (partition_id, consumer_group, message_offset) DO NOTHING
)
SELECT u.ord, u.cursor_offset, u.dead, u.qname, u.pname FROM u
