WITH t AS (
    INSERT INTO queen.log_tombstones (partition_id, message_offset)
    SELECT $1, o FROM unnest($2::int8[]) AS o ORDER BY o
    ON CONFLICT (partition_id, message_offset) DO NOTHING
    RETURNING 1
), l AS (
    -- The dead letters are locked in the order every path
    -- locks them, (partition, group, offset), as a requeue of
    -- the same ones does: then neither waits on the other in a
    -- cycle.
    SELECT x.id FROM queen.dead_letters x WHERE x.partition_id = $1 AND x.message_offset = ANY($2::int8[])
    ORDER BY x.consumer_group, x.message_offset FOR UPDATE
), d AS (
    DELETE FROM queen.dead_letters d USING l WHERE d.id = l.id
)
SELECT count(*) FROM t
