package pgwire

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The known-partition statement runs on every bundle, so its parameters and
// answers are in PostgreSQL's binary wire format, written and read here
// rather than through pgx's type map: its generic array encoding was a
// third of the bridge's cost of a bundle call (pgx looks up a plan for
// every value and boxes every element).

// Element type OIDs of the arrays the statement takes.
const (
	oidBytea = 17
	oidInt8  = 20
	oidInt4  = 23
	oidText  = 25
)

// binaryFormat asks for every parameter or result column in binary.
var binaryFormat = []int16{1}

// arrayHeader appends a one-dimensional array header of n elements of oid,
// without NULLs, lower bound 1.
func arrayHeader(b []byte, oid uint32, n int) []byte {
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, 0) // no NULLs
	b = binary.BigEndian.AppendUint32(b, oid)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint32(b, 1) // lower bound
}

func appendInt8Array(b []byte, vs []int64) []byte {
	b = arrayHeader(b, oidInt8, len(vs))
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func appendInt4Array(b []byte, vs []int32) []byte {
	b = arrayHeader(b, oidInt4, len(vs))
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// appendBytesArray appends an array of bytea or text (oid) elements.
func appendBytesArray[T ~[]byte | ~string](b []byte, oid uint32, vs []T) []byte {
	b = arrayHeader(b, oid, len(vs))
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

func int8Bytes(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func int4Bytes(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// postgresEpoch is where binary timestamptz values count from.
var postgresEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func readInt8(col []byte) (int64, error) {
	if len(col) != 8 {
		return 0, fmt.Errorf("%w: int8 column of %d bytes", ErrBadResult, len(col))
	}
	return int64(binary.BigEndian.Uint64(col)), nil
}

func readInt4(col []byte) (int32, error) {
	if len(col) != 4 {
		return 0, fmt.Errorf("%w: int4 column of %d bytes", ErrBadResult, len(col))
	}
	return int32(binary.BigEndian.Uint32(col)), nil
}

func readTimestamptz(col []byte) (time.Time, error) {
	us, err := readInt8(col)
	if err != nil {
		return time.Time{}, err
	}
	return postgresEpoch.Add(time.Duration(us) * time.Microsecond), nil
}
