package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/zeebo/xxh3"
)

// Flag bits of a frame.
const (
	// FlagEncrypted: the payload is AES-GCM ciphertext, not the pushed JSON.
	FlagEncrypted uint8 = 1 << 0
	// FlagKeyed (with FlagEncrypted): the ciphertext starts with the id of
	// its key and is bound to its tenant, queue and partition (queues'
	// sealer). Without it, an encrypted payload predates key ids.
	FlagKeyed uint8 = 1 << 1
	// FlagBase64: the payload is a JSON string holding the standard base64
	// of a body that was not JSON (a JetStream publish of binary or plain
	// text); reads mark such a message "encoding":"base64". Independent of
	// encryption: a sealed payload keeps it, and it describes the plaintext.
	FlagBase64 uint8 = 1 << 2
	// FlagNATS: the frame carries the NATS subject and header block it was
	// published with (a JetStream publish), packed after the payload. The
	// codec owns this bit: Pack sets it exactly when Subject or Header is
	// not empty, whatever the caller's Flags say, and Unpack reports it.
	// Frames without it are packed as before the bit existed.
	FlagNATS uint8 = 1 << 3
)

// Frame is one message as stored.
type Frame struct {
	ID            [16]byte
	TransactionID string
	TraceID       string
	Flags         uint8
	Payload       []byte
	// Subject is the NATS subject the message was published on; "" for a
	// Queen push.
	Subject string
	// Header is the NATS header block as published ("NATS/1.0\r\n",
	// "Name: value\r\n" lines, "\r\n"); nil when the message had none.
	// Stored as given: it is not covered by payload encryption.
	Header []byte
}

// HasNATS says whether f carries a subject or header: whether it is packed
// with FlagNATS.
func (f *Frame) HasNATS() bool { return f.Subject != "" || len(f.Header) > 0 }

// HashSize is the width of one entry of the hash blob.
const HashSize = 16

// Hash is the deduplication identity of a transactionId inside a partition.
func Hash(transactionID string) [HashSize]byte {
	return xxh3.HashString128(transactionID).Bytes()
}

// AppendHashes appends the hash blob of frames to dst.
func AppendHashes(dst []byte, frames []Frame) []byte {
	for i := range frames {
		h := Hash(frames[i].TransactionID)
		dst = append(dst, h[:]...)
	}
	return dst
}

// ErrCorrupt means a payload blob could not be decoded.
var ErrCorrupt = errors.New("segment: corrupt payload blob")

// rawPool holds the scratch buffers frames are packed into before compression.
var rawPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// packedSize is an upper bound of the packed (uncompressed) frames.
func packedSize(frames []Frame) int {
	n := binary.MaxVarintLen64
	for i := range frames {
		f := &frames[i]
		n += 1 + 16 + 3*binary.MaxVarintLen64 + len(f.TransactionID) + len(f.TraceID) + len(f.Payload)
		if f.HasNATS() {
			n += 2*binary.MaxVarintLen64 + len(f.Subject) + len(f.Header)
		}
	}
	return n
}

func appendFrames(dst []byte, frames []Frame) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(frames)))
	for i := range frames {
		f := &frames[i]
		nats := f.HasNATS()
		flags := f.Flags &^ FlagNATS
		if nats {
			flags |= FlagNATS
		}
		dst = append(dst, flags)
		dst = append(dst, f.ID[:]...)
		dst = binary.AppendUvarint(dst, uint64(len(f.TransactionID)))
		dst = append(dst, f.TransactionID...)
		dst = binary.AppendUvarint(dst, uint64(len(f.TraceID)))
		dst = append(dst, f.TraceID...)
		dst = binary.AppendUvarint(dst, uint64(len(f.Payload)))
		dst = append(dst, f.Payload...)
		if nats {
			dst = binary.AppendUvarint(dst, uint64(len(f.Subject)))
			dst = append(dst, f.Subject...)
			dst = binary.AppendUvarint(dst, uint64(len(f.Header)))
			dst = append(dst, f.Header...)
		}
	}
	return dst
}

// frameReader walks packed frames.
type frameReader struct {
	b   []byte
	err error
}

func (r *frameReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad length", ErrCorrupt)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *frameReader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: field of %d bytes overruns the blob", ErrCorrupt, n)
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *frameReader) frame(f *Frame) {
	head := r.bytes(17)
	if r.err != nil {
		return
	}
	f.Flags = head[0]
	copy(f.ID[:], head[1:])
	f.TransactionID = string(r.bytes(r.uvarint()))
	f.TraceID = string(r.bytes(r.uvarint()))
	f.Payload = r.bytes(r.uvarint())
	if f.Flags&FlagNATS != 0 {
		f.Subject = string(r.bytes(r.uvarint()))
		if h := r.bytes(r.uvarint()); len(h) > 0 {
			f.Header = h
		}
		if !f.HasNATS() { // two empty fields: as Pack would have written it
			f.Flags &^= FlagNATS
		}
	}
}

// skip passes over one frame without materialising it.
func (r *frameReader) skip() {
	head := r.bytes(17)
	fields := 3
	if r.err == nil && head[0]&FlagNATS != 0 {
		fields = 5
	}
	for i := 0; i < fields && r.err == nil; i++ {
		r.bytes(r.uvarint())
	}
}
