// Package segment is the frame codec of the partitioned log.
//
// A segment is the unit the write path stores: the frames one partition
// received in one flush, kept as one row. Two byte arrays describe it:
//
//   - the hash blob: 16 × K bytes, the xxh3_128 of frame k's deduplication
//     identity (its transactionId; the partition is implied by where the
//     segment is stored) at position 16·k, big-endian;
//   - the payload blob: a version byte, a codec byte, then the packed frames,
//     zstd-compressed, or stored raw when they are small (under 4 KiB packed)
//     or compression would not shrink them.
//
// Packed frames (after decompression): uvarint K, then per frame
// flags(1) | message id(16) | uvarint+transactionId | uvarint+traceId |
// uvarint+payload, and, only when the flags hold FlagNATS, uvarint+subject |
// uvarint+header (the NATS subject and header block a JetStream producer
// published with). Payload bytes are stored exactly as given; the flags say
// what they are (FlagEncrypted, FlagKeyed, FlagBase64). Frames without
// FlagNATS are packed byte for byte as before the bit existed, so segments
// of either age read alike (testdata/format-v1-*.bin). The subject and
// header are no part of the deduplication identity.
//
// The package also holds the plain types a bundle is described with on its way
// to PostgreSQL and back (Write, Result, Stored), so that fusion, which builds
// bundles, and pgwire, which runs them, share a vocabulary without importing
// each other.
//
// It imports nothing of the project but internal/tenancy. It does no I/O and
// keeps no state besides pooled zstd encoders and decoders,
// which are safe for concurrent use.
package segment
