package segment

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
)

// realisticFrames builds n frames of order-event JSON with varied values
// (ids, amounts, timestamps, a few enumerations), client transactionIds and
// minted message ids: what a producer of business events pushes, not one
// letter repeated.
func realisticFrames(rng *rand.Rand, n int) []Frame {
	tiers := []string{"gold", "silver", "bronze", "none"}
	currencies := []string{"EUR", "USD", "GBP", "CHF"}
	out := make([]Frame, n)
	for i := range out {
		payload := fmt.Sprintf(`{"orderId":"ord-%08d","customer":{"id":"c-%06d","tier":%q,"country":"%c%c"},`+
			`"lines":[{"sku":"SKU-%05d","qty":%d,"price":%d.%02d},{"sku":"SKU-%05d","qty":%d,"price":%d.%02d}],`+
			`"total":%d.%02d,"currency":%q,"placedAt":"2026-11-%02dT%02d:%02d:%02d.%03dZ","note":null}`,
			rng.Intn(1e8), rng.Intn(1e6), tiers[rng.Intn(len(tiers))], 'A'+rng.Intn(26), 'A'+rng.Intn(26),
			rng.Intn(1e5), 1+rng.Intn(5), rng.Intn(500), rng.Intn(100), rng.Intn(1e5), 1+rng.Intn(5), rng.Intn(500), rng.Intn(100),
			rng.Intn(2000), rng.Intn(100), currencies[rng.Intn(len(currencies))],
			1+rng.Intn(28), rng.Intn(24), rng.Intn(60), rng.Intn(60), rng.Intn(1000))
		out[i] = Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprintf("order-%08d-%d", rng.Intn(1e8), i), Payload: []byte(payload)}
	}
	return out
}

// BenchmarkPackRealistic: what packing a segment costs and saves, by segment
// size, raw against zstd at the two fastest levels. Metrics: ratio (packed ÷
// stored bytes) and ns per input byte; SetBytes gives MB/s. The choice of
// level and of the size below which segments stay raw comes from these
// figures (docs/write-path.md).
func BenchmarkPackRealistic(b *testing.B) {
	fastest, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true))
	dflt, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true))
	for _, n := range []int{1, 4, 16, 64, 256} {
		frames := realisticFrames(rand.New(rand.NewSource(int64(n))), n)
		raw := appendFrames(nil, frames)
		for _, c := range []struct {
			name string
			enc  *zstd.Encoder
		}{{"raw", nil}, {"zstd-fastest", fastest}, {"zstd-default", dflt}} {
			b.Run(fmt.Sprintf("frames=%d/%s", n, c.name), func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				var out []byte
				for i := 0; i < b.N; i++ {
					if c.enc == nil {
						out = append(out[:0], raw...)
					} else {
						out = c.enc.EncodeAll(raw, out[:0])
					}
				}
				b.ReportMetric(float64(len(raw))/float64(len(out)), "ratio")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(raw)), "ns/byte")
			})
		}
	}
}
