// Command queen-bridge runs the queenbridge service: NATS and HTTP in front,
// fused PostgreSQL transactions behind. With no configuration it runs a whole
// node on this machine: an embedded NATS server and a private PostgreSQL
// cluster under ./data/pg. `queen-bridge -h` lists every setting.
package main
