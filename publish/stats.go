package publish

import "time"

// SourceStats are one watched database's figures.
type SourceStats struct {
	Database string
	Slot     string
	State    string // State*
	// Relayed counts the messages pushed from this database's slot by
	// this bridge (stored, or found stored: duplicates of a replay).
	Relayed uint64
	// Skipped counts messages that could not be pushed at all (content
	// this bridge cannot read), each logged.
	Skipped uint64
	// LagBytes is how far the slot's confirmed position is behind the
	// server's WAL: from the stream while this bridge reads it, else from
	// pg_replication_slots (0 when unknown).
	LagBytes int64
	// Lag is how long the oldest transaction handed out and not yet
	// stored has been committed (0 when none, or not reading).
	Lag time.Duration
	// Behind: the lag passed MaxLagBytes or MaxLag.
	Behind bool
}

// Stats returns every source's figures, in the order of Config.Sources.
func (r *Relay) Stats() []SourceStats {
	out := make([]SourceStats, 0, len(r.sources))
	now := time.Now()
	for _, s := range r.sources {
		st := SourceStats{Database: s.database, Slot: s.slot, State: StateStarting, Relayed: s.relayed.Load(), Skipped: s.skipped.Load()}
		if p := s.state.Load(); p != nil {
			st.State = *p
		}
		if slot := s.reading.Load(); slot != nil {
			if end, c := slot.ServerEnd(), slot.Confirmed(); end > c {
				st.LagBytes = int64(end - c)
			}
			s.mu.Lock()
			if len(s.pending) > 0 {
				st.Lag = max(now.Sub(s.pending[0].commit), 0)
			}
			s.mu.Unlock()
		} else if st.State == StateStandby {
			st.LagBytes = s.standbyLag.Load()
		}
		st.Behind = st.LagBytes > r.cfg.MaxLagBytes || st.Lag > r.cfg.MaxLag
		out = append(out, st)
	}
	return out
}

// Behind names the slots beyond the lag bounds (database/slot), for the
// health answer and the console.
func (r *Relay) Behind() []string {
	var out []string
	for _, st := range r.Stats() {
		if st.Behind {
			out = append(out, st.Database+"/"+st.Slot)
		}
	}
	return out
}
