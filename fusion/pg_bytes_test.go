package fusion_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// countingSink is pgwire.DB (its FlushMeter and HashSource included) that
// records what every bundle call carried.
type countingSink struct {
	*pgwire.DB
	mu    sync.Mutex // guards calls: bundles in flight at once each add theirs
	calls [][]segment.Write
}

func (c *countingSink) PushBundle(ctx context.Context, writes []segment.Write) ([]segment.Result, error) {
	c.mu.Lock()
	c.calls = append(c.calls, writes)
	c.mu.Unlock()
	return c.DB.PushBundle(ctx, writes)
}

// largeFrame is a frame whose payload is a JSON string of size bytes of
// random base64.
func largeFrame(tx string, size int) segment.Frame {
	raw := make([]byte, size*3/4)
	_, _ = rand.Read(raw)
	s := base64.StdEncoding.EncodeToString(raw)
	return segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(`"` + s[:size-2] + `"`)}
}

// Through PostgreSQL: partitions holding several bundles' worth of large
// frames, and one frame four times the bound. Every call stays within
// BundleMaxBytes but the one carrying that frame alone; every frame is
// queued, and each partition's offsets hold its frames in the order they
// were submitted.
func TestBundleBytesBoundWithPostgres(t *testing.T) {
	const bound = 256 << 10
	db := openDB(t, 4)
	sink := &countingSink{DB: db}
	f := start(t, sink, func(c *fusion.Config) { c.BundleMaxBytes = bound })
	type sub struct {
		part   string
		frames []segment.Frame
		ch     chan []fusion.Verdict
	}
	var subs []*sub
	order := map[string][]segment.Frame{}
	for round := 0; round < 4; round++ {
		for p := 0; p < 3; p++ {
			part := fmt.Sprintf("p%d", p)
			s := &sub{part: part, ch: make(chan []fusion.Verdict, 1)}
			for i := 0; i < 30; i++ {
				s.frames = append(s.frames, largeFrame(fmt.Sprintf("%s-%d-%d", part, round, i), 4<<10))
			}
			if p == 0 && round == 1 {
				s.frames[10] = largeFrame("huge", 4*bound)
			}
			order[part] = append(order[part], s.frames...)
			if err := f.Submit(context.Background(), fusion.Submission{Queue: "big", Partition: part, Frames: s.frames, Done: func(v []fusion.Verdict) { s.ch <- v }}); err != nil {
				t.Fatal(err)
			}
			subs = append(subs, s)
		}
	}
	next := map[string]int64{}
	pids := map[string]int64{}
	for _, s := range subs {
		v := <-s.ch
		for k := range v {
			next[s.part]++
			if v[k].Status != fusion.Queued || v[k].Offset != next[s.part] {
				t.Fatalf("%s frame %d: %s@%d, want queued@%d (%v)", s.part, k, v[k].Status, v[k].Offset, next[s.part], v[k].Err)
			}
			pids[s.part] = v[k].PartitionID
		}
	}
	for part, frames := range order {
		for i, want := range frames {
			off := int64(i + 1)
			stored, err := db.SegmentAt(context.Background(), pids[part], off)
			if err != nil {
				t.Fatal(err)
			}
			got, err := segment.Unpack(stored.Blob, int(off-stored.BaseOffset))
			if err != nil || got.ID != want.ID || string(got.Payload) != string(want.Payload) {
				t.Fatalf("%s offset %d holds %q (%v), want %q", part, off, got.TransactionID, err, want.TransactionID)
			}
		}
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	over, segs := 0, 0
	for i, writes := range sink.calls {
		var bytes int64
		for _, w := range writes {
			bytes += int64(len(w.Blob) + len(w.Hashes))
		}
		segs += len(writes)
		if bytes > bound {
			if len(writes) != 1 || writes[0].Count != 1 || writes[0].Partition != "p0" {
				t.Fatalf("call %d carried %d bytes in %d segments with BundleMaxBytes %d", i, bytes, len(writes), bound)
			}
			over++
		}
	}
	if over != 1 {
		t.Fatalf("%d calls over the bound, want one: the large frame alone", over)
	}
	// 360 frames of 4 KiB are about six bundles' worth: each partition is
	// written in several segments.
	if segs < 6 {
		t.Fatalf("%d segments in %d calls: the partitions were not split", segs, len(sink.calls))
	}
}
