/* queen:js-consumer-delete */ WITH j AS MATERIALIZED (
    SELECT j.id, j.queue_id, j.name FROM queen.queues q JOIN queen.jetstream_consumers j ON j.queue_id = q.id
    WHERE q.tenant = $1 AND q.name = $2 AND j.name = $3
    FOR UPDATE OF j
), l AS MATERIALIZED (
    SELECT c.partition_id, c.consumer_group
    FROM j JOIN queen.log_partitions p ON p.queue_id = j.queue_id
    JOIN queen.consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = j.name
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c
), dc AS (
    DELETE FROM queen.consumer_cursors c USING l
    WHERE c.partition_id = l.partition_id AND c.consumer_group = l.consumer_group
), ds AS (
    DELETE FROM queen.consumer_subscriptions s USING j
    WHERE s.queue_id = j.queue_id AND s.consumer_group = j.name
), dj AS (
    DELETE FROM queen.jetstream_consumers x USING j WHERE x.id = j.id
    RETURNING x.id
)
SELECT count(*) FROM dj
