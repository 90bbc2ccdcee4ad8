package spool

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Record is one spooled message: everything needed to replay it. Payloads
// of encrypted queues are stored as the ciphertext the bridge made (Flags says
// so): the spool never holds their plaintext, and replay does not encrypt
// again.
type Record struct {
	Tenant        tenancy.TenantID
	Queue         string
	Partition     string
	MessageID     [16]byte
	TransactionID string
	TraceID       string
	Flags         uint8
	Payload       []byte
	// Subject and Header are a JetStream publish's NATS subject and header
	// block (segment.Frame's); empty for a Queen push.
	Subject   string
	Header    []byte
	SpooledAt time.Time
}

const (
	recordVersion = 1
	// recordNATS is the version of a record with a NATS subject or header:
	// the fields of version 1, then the subject and the header. Records
	// without them are written as version 1, as before they existed.
	recordNATS = 2
	// headerSize is magic + length + CRC. Records written before the magic
	// existed have the 8-byte legacyHeaderSize header (length + CRC) and
	// still read.
	headerSize       = 12
	legacyHeaderSize = 8
	// maxRecord bounds one record body; larger lengths are corruption.
	maxRecord = 256 << 20
)

// magic starts every record header, so that a reader can find the next
// record after a damaged one: a record is where the magic is followed by a
// length and a body whose CRC checks out.
var magic = [4]byte{0xf1, 'Q', 'S', 0x02}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// size is the encoded size of r's body.
func (r *Record) size() int {
	return 1 + 16 + 16 + 8 + 1 + 7*binary.MaxVarintLen32 + len(r.Queue) + len(r.Partition) + len(r.TransactionID) + len(r.TraceID) + len(r.Payload) +
		len(r.Subject) + len(r.Header)
}

// hasNATS says whether r is written as recordNATS.
func (r *Record) hasNATS() bool { return r.Subject != "" || len(r.Header) > 0 }

// appendRecord appends the framed record (header and body) to dst.
func appendRecord(dst []byte, r *Record) []byte {
	start := len(dst)
	dst = append(dst, magic[:]...)
	dst = append(dst, make([]byte, headerSize-len(magic))...)
	if r.hasNATS() {
		dst = append(dst, recordNATS)
	} else {
		dst = append(dst, recordVersion)
	}
	dst = append(dst, r.Tenant[:]...)
	dst = append(dst, r.MessageID[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.SpooledAt.UnixNano()))
	dst = append(dst, r.Flags)
	for _, s := range []string{r.Queue, r.Partition, r.TransactionID, r.TraceID} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Payload)))
	dst = append(dst, r.Payload...)
	if r.hasNATS() {
		dst = binary.AppendUvarint(dst, uint64(len(r.Subject)))
		dst = append(dst, r.Subject...)
		dst = binary.AppendUvarint(dst, uint64(len(r.Header)))
		dst = append(dst, r.Header...)
	}
	body := dst[start+headerSize:]
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(dst[start+8:], crc32.Checksum(body, castagnoli))
	return dst
}

// decodeRecord parses one record body (after its header was checked).
func decodeRecord(body []byte) (Record, error) {
	var r Record
	if len(body) < 1+16+16+8+1 || (body[0] != recordVersion && body[0] != recordNATS) {
		return r, fmt.Errorf("%w: short body or unknown version", ErrCorrupt)
	}
	copy(r.Tenant[:], body[1:17])
	copy(r.MessageID[:], body[17:33])
	r.SpooledAt = time.Unix(0, int64(binary.LittleEndian.Uint64(body[33:41])))
	r.Flags = body[41]
	rest := body[42:]
	next := func() ([]byte, error) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, fmt.Errorf("%w: field length", ErrCorrupt)
		}
		f := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		return f, nil
	}
	var fields [7][]byte
	n := 5
	if body[0] == recordNATS {
		n = 7
	}
	for i := range fields[:n] {
		f, err := next()
		if err != nil {
			return r, err
		}
		fields[i] = f
	}
	if len(rest) != 0 {
		return r, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(rest))
	}
	r.Queue, r.Partition, r.TransactionID, r.TraceID = string(fields[0]), string(fields[1]), string(fields[2]), string(fields[3])
	r.Payload = fields[4]
	r.Subject = string(fields[5])
	if len(fields[6]) > 0 {
		r.Header = fields[6]
	}
	if body[0] == recordNATS && !r.hasNATS() {
		return r, fmt.Errorf("%w: a version %d record without a subject or header", ErrCorrupt, recordNATS)
	}
	return r, nil
}

// readRecord reads the framed record at the start of b. It returns the
// record, the bytes it took, or an error when b does not start with a whole,
// intact record (a torn tail, or corruption).
func readRecord(b []byte) (Record, int, error) {
	hs, lenAt := headerSize, 4
	if len(b) < len(magic) || [4]byte(b[:4]) != magic {
		hs, lenAt = legacyHeaderSize, 0 // written before the magic existed
	}
	if len(b) < hs {
		return Record{}, 0, fmt.Errorf("%w: %d bytes left, shorter than a header", ErrCorrupt, len(b))
	}
	n := binary.LittleEndian.Uint32(b[lenAt:])
	if n > maxRecord || int(n) > len(b)-hs {
		return Record{}, 0, fmt.Errorf("%w: length %d with %d bytes left", ErrCorrupt, n, len(b)-hs)
	}
	body := b[hs : hs+int(n)]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[lenAt+4:]) {
		return Record{}, 0, fmt.Errorf("%w: CRC mismatch", ErrCorrupt)
	}
	r, err := decodeRecord(body)
	return r, hs + int(n), err
}

// walk reads a file's records in order, calling fn with each whole one.
// Past a damaged record it looks for the next magic where a whole record
// checks out and goes on from there; the bytes passed over are skipped.
// When nothing whole follows a damage, what remains is the torn tail: end
// is where it starts (len(data) when there is none).
func walk(data []byte, fn func(r Record)) (end, skipped int) {
	off := 0
	for off < len(data) {
		r, n, err := readRecord(data[off:])
		if err == nil {
			fn(r)
			off += n
			end = off
			continue
		}
		next := resync(data, off+1)
		if next < 0 {
			return end, skipped
		}
		skipped += next - off
		off = next
	}
	return off, skipped
}

// resync is the offset of the first whole record at or after from, or -1.
func resync(data []byte, from int) int {
	for from < len(data) {
		i := bytes.Index(data[from:], magic[:])
		if i < 0 {
			return -1
		}
		if _, _, err := readRecord(data[from+i:]); err == nil {
			return from + i
		}
		from += i + 1
	}
	return -1
}
