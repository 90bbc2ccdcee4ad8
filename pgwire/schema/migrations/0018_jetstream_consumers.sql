-- lock: ACCESS EXCLUSIVE on queen.consumer_cursors: adding three nullable columns, no rewrite
--
-- JetStream pull consumers on the log. A consumer is a consumer group:
-- its name is the group of its cursor rows, its ack floor on a partition
-- is consumer_cursors.cursor_offset, so lag, the console and the admin
-- group routes see it as they see Queen's groups. Its definition and, per
-- partition, what it acknowledged above the floor and how often it
-- delivered what it delivered more than once are durable; everything else
-- (parked pulls, what is in flight, ack deadlines) is the owning bridge's
-- memory.

-- One row per consumer of a queue (a stream's queue): the engine's encoding
-- of its configuration (config, opaque here; compared as jsonb, so key
-- order and spacing do not count), and the deliver policy its cursors were
-- seeded by when it was created (kept apart from config, which the schema
-- does not read). Tenant-scoped through its queue. Removed with its queue
-- (queue_delete_v1, and log_purge_step_v1 for a row made while the delete
-- ran). No foreign key, as elsewhere in the schema: queue ids are never
-- reused.
--
-- Lock order: a definition row comes after its queue row and before
-- partition and consumer rows (queue_delete_v1 locks the queue's
-- definitions before its partitions; the acknowledgement statement holds
-- its consumers' definitions, FOR KEY SHARE, before their cursor rows, so
-- a consumer deleted meanwhile gets no cursor row again).
CREATE TABLE queen.jetstream_consumers (
    id                 bigserial   PRIMARY KEY,
    queue_id           bigint      NOT NULL,
    name               text        NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 255),
    durable            boolean     NOT NULL,
    config             jsonb       NOT NULL,
    deliver_policy     text        NOT NULL
        CHECK (deliver_policy IN ('all', 'new', 'by_start_time', 'last', 'last_per_subject', 'by_start_sequence')),
    -- by_start_time: the time; by_start_sequence: the partition and the
    -- first offset to deliver.
    start_time         timestamptz,
    start_partition_id bigint,
    start_offset       bigint,
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- Moved by the bridge that serves the consumer, for inactive_threshold.
    last_active_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (queue_id, name)
);

-- A JetStream consumer's acknowledgement state above its floor, on its
-- cursor row: the offsets acknowledged above cursor_offset (explicit acks
-- out of order, terminated messages), ascending; and the offsets delivered
-- more than once with their delivery counts (parallel, ascending), so that
-- max_deliver holds across a restart. NULL when empty, which is always for
-- Queen's groups.
--
-- Columns of the cursor row rather than a table of their own: the
-- acknowledgement statement then writes one row per (partition, consumer),
-- the floor and the sets together, where a second table would double the
-- row versions and WAL of every commit. No index covers them, so those
-- updates stay heap-only (HOT) while the row fits its page (fillfactor 70),
-- and a pop or acknowledgement of a Queen group does not see them: NULLs
-- cost a bit of the null bitmap the row already has. The sets are bounded
-- by the consumer's max_ack_pending and usually empty, since acks mostly
-- come in order and the floor moves over them. Offsets are absolute, not
-- relative to the floor, so a Queen acknowledgement moving cursor_offset
-- leaves them true; those at or below the floor mean nothing and go at the
-- next write. A seek clears them.
ALTER TABLE queen.consumer_cursors
    ADD COLUMN acked_above bigint[],
    ADD COLUMN delivery_offsets bigint[],
    ADD COLUMN delivery_counts integer[];
