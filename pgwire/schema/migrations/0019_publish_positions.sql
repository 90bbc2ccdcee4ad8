-- The publish relay's position per replication slot (docs/publish.md): the
-- end of the last relayed transaction whose messages are stored. The relay
-- writes it after their pushes commit and before it confirms the slot, and
-- skips what a replay hands it at or below it: after a PostgreSQL crash the
-- slot may restart from an older position than it was confirmed at.
-- slot: the source cluster's system identifier, '/', the slot's name.
CREATE TABLE queen.publish_positions (
    slot text PRIMARY KEY,
    lsn bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
