package cursors

import "sort"

// ReadAfter serves a JetStream consumer's read from memory: up to
// rg.Limit messages after rg.After (their sizes, segment.Frame payloads,
// summed to at most rg.MaxBytes when set), when the run the tail holds for
// the partition covers rg.After+1. False when it does not: the read goes to
// PostgreSQL. The messages end at the run's end, which may be before more
// that other bridges or older runs hold: the caller reads on after Next.
//
// What memory holds is what this bridge committed, as the commit hook
// hands consumers their new messages: a message tombstoned since is
// delivered as the hook would have (retention and queue deletes drop the
// tail's segments first).
func (t *Tail) ReadAfter(rg ReadRange) (ReadRun, bool) {
	if t == nil || t.max <= 0 || rg.Limit < 1 {
		return ReadRun{}, false
	}
	t.mu.Lock()
	p := t.parts[rg.PartitionID]
	if p == nil || len(p.segs) == 0 || rg.After < p.segs[0].Base-1 || rg.After >= p.segs[len(p.segs)-1].End {
		t.mu.Unlock()
		return ReadRun{}, false
	}
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].End > rg.After })
	var segs []*TailSegment
	for n := 0; i < len(p.segs) && n < rg.Limit; i++ {
		s := p.segs[i]
		segs = append(segs, s)
		n += int(s.End - max(s.Base, rg.After+1) + 1)
	}
	t.mu.Unlock()
	run := ReadRun{PartitionID: rg.PartitionID, Next: rg.After}
	var size int64
	for _, s := range segs {
		frames, err := s.framesOnce()
		if err != nil || len(frames) != int(s.End-s.Base+1) {
			if len(run.Messages) == 0 {
				return ReadRun{}, false // PostgreSQL's copy decides
			}
			break
		}
		for k := range frames {
			o := s.Base + int64(k)
			if o <= rg.After {
				continue
			}
			if len(run.Messages) >= rg.Limit {
				return t.served(run)
			}
			n := int64(len(frames[k].Payload))
			if rg.MaxBytes > 0 && size+n > rg.MaxBytes {
				run.Full = true
				return t.served(run)
			}
			size += n
			run.Messages = append(run.Messages, StoredMsg{Offset: o, Frame: frames[k], CreatedAt: s.CreatedAt})
			run.Next = o
		}
	}
	return t.served(run)
}

func (t *Tail) served(run ReadRun) (ReadRun, bool) {
	t.jsHits.Add(1)
	return run, true
}
