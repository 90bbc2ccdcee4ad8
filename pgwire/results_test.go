package pgwire

import (
	"errors"
	"testing"

	"github.com/queenbridge/queenbridge/segment"
)

// results accepts well-formed arrays and refuses every malformed answer
// with ErrBadResult, so a bad answer never becomes a verdict.
func TestResultsRefuseMalformedArrays(t *testing.T) {
	good := func() wireResults {
		return wireResults{pids: []int64{7, 8}, qids: []int64{1, 1}, wins: []int32{60, 60}, bases: []int64{5, 0},
			dupSegs: []int32{2}, dupIdx: []int32{0}, dupOffs: []int64{3}}
	}
	w := good()
	out, err := w.results(2)
	if err != nil || out[0].Status != segment.Queued || out[0].BaseOffset != 5 ||
		out[1].Status != segment.Duplicate || len(out[1].Dups) != 1 || out[1].Dups[0] != (segment.Dup{Index: 0, Offset: 3}) {
		t.Fatalf("well-formed: %+v, %v", out, err)
	}
	for name, spoil := range map[string]func(*wireResults){
		"too few results":                  func(w *wireResults) { w.bases = w.bases[:1] },
		"no queue ids":                     func(w *wireResults) { w.qids = nil },
		"duplicate arrays misaligned":      func(w *wireResults) { w.dupOffs = nil },
		"duplicate names a queued segment": func(w *wireResults) { w.dupSegs[0] = 1 },
		"duplicate names no segment":       func(w *wireResults) { w.dupSegs[0] = 3 },
		"neither queued nor duplicate":     func(w *wireResults) { w.dupSegs, w.dupIdx, w.dupOffs = nil, nil, nil },
	} {
		w := good()
		spoil(&w)
		if _, err := w.results(2); !errors.Is(err, ErrBadResult) {
			t.Errorf("%s: %v, want ErrBadResult", name, err)
		}
	}
}
