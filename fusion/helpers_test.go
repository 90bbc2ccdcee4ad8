package fusion

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/segment"
)

func startFusion(t testing.TB, sink Sink, tune func(*Config)) *Fusion {
	t.Helper()
	cfg := Config{Sink: sink}
	if tune != nil {
		tune(&cfg)
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return f
}

func frames(txids ...string) []segment.Frame {
	out := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		out[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(fmt.Sprintf("%q", tx))}
	}
	return out
}

// submitAsync submits and returns a channel that yields the verdicts.
func submitAsync(t testing.TB, f *Fusion, q, p string, fr []segment.Frame) <-chan []Verdict {
	t.Helper()
	ch := make(chan []Verdict, 1)
	err := f.Submit(context.Background(), Submission{Queue: q, Partition: p, Frames: fr, Done: func(v []Verdict) { ch <- v }})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return ch
}

func wait(t testing.TB, ch <-chan []Verdict) []Verdict {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("no verdict within 30s")
		return nil
	}
}

func submit(t testing.TB, f *Fusion, q, p string, txids ...string) []Verdict {
	t.Helper()
	return wait(t, submitAsync(t, f, q, p, frames(txids...)))
}

func statuses(vs []Verdict) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s@%d", v.Status, v.Offset)
	}
	return s
}

// bigFrames returns frames with the given transactionIds and a payload of
// size bytes each: a JSON string of random base64, which zstd barely
// shrinks.
func bigFrames(size int, txids ...string) []segment.Frame {
	out := frames(txids...)
	for i := range out {
		out[i].Payload = randomJSON(size)
	}
	return out
}

func randomJSON(size int) []byte {
	raw := make([]byte, size*3/4)
	_, _ = rand.Read(raw)
	s := base64.StdEncoding.EncodeToString(raw)
	return []byte(`"` + s[:max(0, min(len(s), size-2))] + `"`)
}
