-- Every claim and release changes lease_id, so with an index on it no
-- update of a cursor row could be a heap-only (HOT) update: each pop and
-- each acknowledgement added an entry to both of the table's indexes and
-- left the old ones for vacuum. Without it the row is rewritten in place
-- on its page (fillfactor 70 leaves room). The only reader by lease is
-- consumer_extend_v1, a rare call, which now reads the table's rows.
DROP INDEX queen.consumer_cursors_lease;
