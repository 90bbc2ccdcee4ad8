-- From here on the current text of every function is a file of its own,
-- pgwire/functions/<name>.sql, which the migrator applies after the numbered
-- migrations, in the same transaction, whenever the file differs from what
-- was last applied. This table records what was applied. Tables, indexes,
-- constraints, triggers and the dropping of functions stay in numbered
-- migrations; pgwire/doc.go has the rules.
CREATE TABLE queen.schema_functions (
    name       text PRIMARY KEY,
    sha256     text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- Functions nothing calls any more. log_push_multi_v1 and log_push_one_v1
-- were kept as wrappers over log_push_multi_v2 (migration 0004) for bridges
-- of the version before it; no release of the bridge calls them. log_probe_v1
-- has had no caller since migration 0006 made log_push_multi_v2 call
-- log_probe_v2, which reads both places a hash blob can be.
DROP FUNCTION queen.log_push_one_v1(bigint, integer, uuid, integer, bytea, bigint, bytea, timestamptz);
DROP FUNCTION queen.log_push_multi_v1(text[], text[], integer[], bytea[], bigint[], bytea[], uuid[], integer[]);
DROP FUNCTION queen.log_probe_v1(bigint, bigint, bigint, timestamptz, bytea, integer);
