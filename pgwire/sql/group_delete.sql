/* queen:group-delete */ WITH l AS MATERIALIZED (
    SELECT c.partition_id, c.consumer_group, q.name AS qname, p.name AS pname
    FROM queen.queues q
    JOIN queen.log_partitions p ON p.queue_id = q.id
    JOIN queen.consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = $2
    WHERE q.tenant = $1 AND ($3 = '' OR q.name = $3)
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c
), d AS (
    DELETE FROM queen.consumer_cursors c USING l
    WHERE c.partition_id = l.partition_id AND c.consumer_group = l.consumer_group
    RETURNING l.qname, l.pname, c.partition_id
), s AS (
    DELETE FROM queen.consumer_subscriptions s USING queen.queues q
    WHERE $4 AND s.queue_id = q.id AND s.consumer_group = $2 AND q.tenant = $1 AND ($3 = '' OR q.name = $3)
)
SELECT d.qname, d.pname, d.partition_id FROM d ORDER BY d.partition_id
