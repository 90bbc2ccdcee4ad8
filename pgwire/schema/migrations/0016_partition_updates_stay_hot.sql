-- No statement reads log_partitions by last_write_at (the console and the
-- consumer views only show it), yet its index made every allocation UPDATE
-- that moved last_write_at a non-HOT update: a new entry in each of the
-- table's three indexes and a dead one for vacuum. The one-second
-- quantisation kept that rare only for partitions pushed to several times a
-- second; at 1,000 partitions taking 1,000 lone pushes a second most updates
-- moved it (6.6 WAL records a push instead of 4). Without the index every
-- allocation UPDATE can stay on its page.
DROP INDEX queen.log_partitions_last_write_at;
