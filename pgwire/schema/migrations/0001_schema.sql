-- The queen schema: queues, partitions, segments, transaction hashes, and
-- system state. Applied once, under the migrator's advisory lock.

CREATE TABLE queen.queues (
    id                   bigserial PRIMARY KEY,
    tenant               uuid    NOT NULL,
    name                 text    NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 255),
    namespace            text    NOT NULL,
    task                 text    NOT NULL,
    encryption_enabled   boolean NOT NULL DEFAULT false,
    -- The bridge sets queen.default_dedup_window_s on its connections
    -- (QUEEN_DEFAULT_DEDUP_WINDOW_S); a queue created by a push takes it.
    dedup_window_seconds integer NOT NULL
        DEFAULT coalesce(nullif(current_setting('queen.default_dedup_window_s', true), '')::integer, 60)
        CHECK (dedup_window_seconds >= 0),
    retention_seconds    integer NOT NULL DEFAULT 0 CHECK (retention_seconds >= 0),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, name)
);

-- One row per partition: the allocator. fillfactor leaves room on each page so
-- the offset UPDATE stays HOT; last_write_at is indexed, which is why the
-- allocator only moves it once a second.
CREATE TABLE queen.log_partitions (
    id            bigserial PRIMARY KEY,
    queue_id      bigint NOT NULL REFERENCES queen.queues (id),
    name          text   NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 255),
    last_offset   bigint NOT NULL DEFAULT 0,
    -- The lowest offset whose log_txns row may still exist; retention moves it.
    txns_start    bigint NOT NULL DEFAULT 1,
    last_write_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (queue_id, name)
) WITH (fillfactor = 70);
CREATE INDEX log_partitions_last_write_at ON queen.log_partitions (last_write_at);

-- One row per segment: offsets [base_offset, end_offset] of one partition,
-- the frames packed and zstd-compressed by the bridge. Keyed by end_offset so
-- "the segment covering offset X" and "segments after X" are one index range.
-- Small segments stay inline (toast_tuple_target); the blob is already
-- compressed, so TOAST must not try again (STORAGE EXTERNAL).
CREATE TABLE queen.log_segments (
    partition_id bigint      NOT NULL,
    end_offset   bigint      NOT NULL,
    base_offset  bigint      NOT NULL,
    msg_count    integer     NOT NULL,
    created_at   timestamptz NOT NULL,
    payload      bytea       NOT NULL,
    PRIMARY KEY (partition_id, end_offset)
) WITH (toast_tuple_target = 8160);
ALTER TABLE queen.log_segments ALTER COLUMN payload SET STORAGE EXTERNAL;

-- One row per segment: the hash blob (16 bytes per frame, xxh3_128 of the
-- transactionId) that deduplication probes and ack-by-transactionId use.
CREATE TABLE queen.log_txns (
    partition_id bigint      NOT NULL,
    end_offset   bigint      NOT NULL,
    base_offset  bigint      NOT NULL,
    created_at   timestamptz NOT NULL,
    hashes       bytea       NOT NULL,
    PRIMARY KEY (partition_id, end_offset)
) WITH (toast_tuple_target = 8160);
ALTER TABLE queen.log_txns ALTER COLUMN hashes SET STORAGE EXTERNAL;

CREATE TABLE queen.system_state (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO queen.system_state (key, value) VALUES ('maintenance', '{"enabled": false}');
