package segment

import (
	"fmt"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// Payload blob header.
const (
	FormatV1  byte = 1
	codecRaw  byte = 0
	codecZstd byte = 1
)

// minCompress: packed frames shorter than this are stored raw. Measured on
// order-event JSON (BenchmarkPackRealistic): zstd's per-call set-up
// dominates small inputs — 4 frames (1.2 KB) cost 7.8 µs for a ratio of 2.3,
// 6.5 ns per byte, and a lone frame grows — while from about 4 KiB on it
// costs 2.5–3.5 ns per byte for a ratio of 3.4–4. A raw segment under 4 KiB
// still stays inline in its row (toast_tuple_target 8160); larger segments
// are compressed, which also keeps most of them inline.
const minCompress = 4 << 10

// MaxPacked bounds the decompressed size of one payload blob. A segment holds
// at most one request body's worth of frames per request feeding it; this is
// far above any real one and stops a corrupt blob from allocating without end.
const MaxPacked = 1 << 30

// The encoder and decoder are created once: EncodeAll and DecodeAll are safe
// for concurrent use and keep their own pools of per-call state.
var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false))
	decoder, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxPacked), zstd.WithDecoderConcurrency(0))
)

// Pack appends the payload blob of frames to dst and returns it.
func Pack(dst []byte, frames []Frame) []byte {
	bp := rawPool.Get().(*[]byte)
	raw := (*bp)[:0]
	if need := packedSize(frames); cap(raw) < need {
		raw = make([]byte, 0, need)
	}
	raw = appendFrames(raw, frames)
	start := len(dst)
	// Room for either outcome up front, so neither path grows dst again.
	dst = slices.Grow(dst, 2+len(raw)+len(raw)/8+64)
	if len(raw) < minCompress {
		dst = append(dst, FormatV1, codecRaw)
		dst = append(dst, raw...)
	} else {
		dst = append(dst, FormatV1, codecZstd)
		dst = encoder.EncodeAll(raw, dst)
		if len(dst)-start-2 >= len(raw) {
			dst = append(dst[:start], FormatV1, codecRaw)
			dst = append(dst, raw...)
		}
	}
	if cap(raw) <= 4<<20 { // do not keep huge scratch buffers alive
		*bp = raw
		rawPool.Put(bp)
	}
	return dst
}

// unpacked returns the packed frames of blob, decompressing when needed.
func unpacked(blob []byte) ([]byte, error) {
	if len(blob) < 2 {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the header", ErrCorrupt, len(blob))
	}
	if blob[0] != FormatV1 {
		return nil, fmt.Errorf("%w: unknown format version %d", ErrCorrupt, blob[0])
	}
	switch blob[1] {
	case codecRaw:
		return blob[2:], nil
	case codecZstd:
		out, err := decoder.DecodeAll(blob[2:], nil)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, blob[1])
	}
}

// Count returns how many frames blob holds.
func Count(blob []byte) (int, error) {
	raw, err := unpacked(blob)
	if err != nil {
		return 0, err
	}
	r := frameReader{b: raw}
	n := r.uvarint()
	if r.err != nil {
		return 0, r.err
	}
	if n > uint64(len(r.b))/17 {
		return 0, fmt.Errorf("%w: claims %d frames in %d bytes", ErrCorrupt, n, len(r.b))
	}
	return int(n), nil
}

// Unpack decodes frame k (0-based) of blob.
func Unpack(blob []byte, k int) (Frame, error) {
	raw, err := unpacked(blob)
	if err != nil {
		return Frame{}, err
	}
	r := frameReader{b: raw}
	n := r.uvarint()
	if r.err != nil {
		return Frame{}, r.err
	}
	if k < 0 || uint64(k) >= n {
		return Frame{}, fmt.Errorf("segment: frame %d out of range: blob holds %d", k, n)
	}
	for i := 0; i < k && r.err == nil; i++ {
		r.skip()
	}
	var f Frame
	r.frame(&f)
	if r.err != nil {
		return Frame{}, r.err
	}
	return f, nil
}

// UnpackAll decodes every frame of blob, in order.
func UnpackAll(blob []byte) ([]Frame, error) {
	raw, err := unpacked(blob)
	if err != nil {
		return nil, err
	}
	r := frameReader{b: raw}
	n := r.uvarint()
	if r.err != nil {
		return nil, r.err
	}
	if n > uint64(len(r.b))/17 {
		return nil, fmt.Errorf("%w: claims %d frames in %d bytes", ErrCorrupt, n, len(r.b))
	}
	frames := make([]Frame, n)
	for i := range frames {
		r.frame(&frames[i])
		if r.err != nil {
			return nil, r.err
		}
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(r.b))
	}
	return frames, nil
}
