-- Queen's Streams SDK on the log (docs/streams.md): the server keeps each
-- streaming query's registration and its per-partition state; the SDK's
-- operators run in the client. A cycle (stream_cycle_v1) commits the state
-- changes of one (query, source partition) with its sink pushes and its
-- source acknowledgement in one transaction.
--
-- Tenant-scoped as queues are: a query belongs to one tenant, and state is
-- reached only through a query of the caller's tenant. Deleting a queue
-- (queue_delete_v1) drops the state of its partitions; a registration
-- with reset drops its query's state.
CREATE TABLE queen.stream_queries (
    id           uuid        PRIMARY KEY,
    tenant       uuid        NOT NULL,
    name         text        NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 255),
    source_queue text        NOT NULL,
    sink_queue   text,
    config_hash  text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, name)
);
CREATE INDEX stream_queries_source ON queen.stream_queries (tenant, source_queue);

-- One row per (query, source partition, key). Keys compare bytewise
-- (COLLATE "C"), so a key prefix is a range of the primary key. window_end
-- is value.windowEnd when it is a number (the SDK's window envelopes), so
-- the ripeness read of the idle-flush timer is a range of an index of its
-- (query, partition), never a scan of other partitions' state.
CREATE TABLE queen.stream_state (
    query_id     uuid             NOT NULL,
    partition_id bigint           NOT NULL,
    key          text COLLATE "C" NOT NULL,
    value        jsonb            NOT NULL,
    window_end   double precision GENERATED ALWAYS AS (
                     jsonb_path_query_first(value, 'strict $.windowEnd ? (@.type() == "number")', '{}', true)::double precision) STORED,
    updated_at   timestamptz      NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (query_id, partition_id, key)
);
CREATE INDEX stream_state_ripe ON queen.stream_state (query_id, partition_id, window_end) WHERE window_end IS NOT NULL;
-- A queue delete drops its partitions' state by partition id.
CREATE INDEX stream_state_partition ON queen.stream_state (partition_id);
