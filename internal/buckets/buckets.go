package buckets

import "github.com/zeebo/xxh3"

// Of is the bucket of (tenant, queue, partition) among n buckets:
// xxh3 over the partition, seeded by xxh3 over the queue, seeded by xxh3
// over the tenant's 16 bytes (mixed with a constant), modulo n.
func Of(tenant [16]byte, queue, partition string, n int) int {
	h := xxh3.HashStringSeed(partition, xxh3.HashStringSeed(queue, xxh3.Hash(tenant[:])^0x6f776e))
	return int(h % uint64(n))
}
