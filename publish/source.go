package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/rs/zerolog"
)

// States of a source, as Stats reports them.
const (
	StateStarting = "starting"  // not connected yet
	StateReading  = "reading"   // this bridge holds the slot and relays
	StateStandby  = "standby"   // another bridge holds the slot; this one takes over when it goes
	StateNotReady = "not-ready" // the database lacks something (logged once at start); queen.publish is not installed
	StateDown     = "down"      // the database did not answer; retried
)

// source is one watched database. Its goroutine (run) owns the sessions;
// the atomics are read by Stats from any goroutine.
type source struct {
	r        *Relay
	dsn      string
	slot     string
	database string
	log      zerolog.Logger

	state      atomic.Pointer[string]
	relayed    atomic.Uint64
	skipped    atomic.Uint64               // messages that could not be pushed at all (bad content): logged
	reading    atomic.Pointer[pgwire.Slot] // the slot while this bridge reads it
	standbyLag atomic.Int64                // the slot's lag as pg_replication_slots shows it, while not reading

	// pending are the transactions handed out and not yet confirmed, in
	// order; the reader appends, the pusher removes, Stats reads the
	// oldest: three goroutines, so a mutex.
	mu      sync.Mutex
	pending []pendingTxn
}

type pendingTxn struct {
	end    uint64
	commit time.Time
}

func (s *source) setState(st string) { s.state.Store(&st) }

// run keeps a session open while ctx lives: it takes the slot when it can,
// and otherwise waits Retry (a minute when the database is not ready) and
// tries again.
func (s *source) run(ctx context.Context) {
	s.setState(StateStarting)
	warnedReady, warnedDown := false, false
	ready := false // the database had what the relay needs at the last check
	var lagRead time.Time
	for ctx.Err() == nil {
		wait := s.r.cfg.Retry
		err := s.session(ctx, &ready)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, pgwire.ErrNotReady):
			s.setState(StateNotReady)
			if !warnedReady {
				// The one line at start that says what is missing.
				s.log.Warn().Msgf("%v; queen.publish is not installed here and nothing is relayed; everything else runs (docs/publish.md)", err)
				warnedReady = true
			}
			wait = time.Minute
		case errors.Is(err, pgwire.ErrSlotBusy):
			s.setState(StateStandby)
			if time.Since(lagRead) >= standbyLagEvery {
				s.noteStandbyLag(ctx)
				lagRead = time.Now()
			}
		case err != nil:
			ready = false
			s.setState(StateDown)
			if !warnedDown {
				s.log.Warn().Err(err).Msg("publish: relay interrupted; retrying")
				warnedDown = true
			}
		default:
			warnedDown = false
		}
		if !sleep(ctx, wait) {
			return
		}
	}
}

// standbyLagEvery is how often a bridge that waits for a slot reads its lag
// (a connection each time): the bound it is held to is far longer.
const standbyLagEvery = 5 * time.Second

// noteStandbyLag reads the slot's lag while another bridge holds it, or
// nobody does: a slot nobody reads holds WAL, and every bridge says so.
func (s *source) noteStandbyLag(ctx context.Context) {
	st, err := pgwire.ReadSlotState(ctx, s.dsn, s.slot)
	if err == nil {
		s.standbyLag.Store(st.LagByte)
	}
}

// session is one connection to the slot: checked (unless *ready says the
// last check passed), opened, read until it fails or ctx ends.
func (s *source) session(ctx context.Context, ready *bool) error {
	if !*ready {
		_, missing, err := pgwire.Readiness(ctx, s.dsn)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: it lacks %s", pgwire.ErrNotReady, strings.Join(missing, ", "))
		}
		*ready = true
	}
	var key string
	var stored uint64
	slot, err := pgwire.OpenSlot(ctx, s.dsn, s.slot, func(systemID string) (uint64, error) {
		key = systemID + "/" + s.slot
		var err error
		stored, err = s.r.cfg.Positions.RelayPosition(ctx, key)
		return stored, err
	})
	if err != nil {
		return err
	}
	s.reading.Store(slot)
	s.setState(StateReading)
	s.log.Info().Msg("publish: relaying this database's queen.publish messages")
	defer func() {
		s.reading.Store(nil)
		s.mu.Lock()
		s.pending = nil
		s.mu.Unlock()
		_ = slot.Close(context.Background())
	}()

	// The reader (this goroutine) hands transactions to the pusher over a
	// bounded channel; the pusher confirms what it stored. Either ending
	// ends the session.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	txns := make(chan pgwire.Txn, 1024)
	pushed := make(chan error, 1)
	go func() { // owned by the session: it waits for it below
		pushed <- s.pushLoop(sctx, slot, key, txns)
		cancel()
	}()
	var readErr error
	for {
		t, err := slot.Next(sctx)
		if err != nil {
			readErr = err
			break
		}
		if t.EndLSN <= stored {
			continue // stored before a crash; the slot's position had not caught up
		}
		s.mu.Lock()
		s.pending = append(s.pending, pendingTxn{end: t.EndLSN, commit: t.CommitTime})
		s.mu.Unlock()
		select {
		case txns <- t:
		case <-sctx.Done():
		}
	}
	cancel()
	pushErr := <-pushed
	if ctx.Err() != nil {
		return nil
	}
	return errors.Join(readErr, pushErr)
}

// pushLoop pushes the transactions in order, as many at once as are
// waiting (up to MaxBatch messages a push). Each item carries its mark,
// which the transaction that stores it stores too: that is what makes a
// replay exact. The position of the last transaction pushed is stored
// only every positionEvery, and confirmed to the slot once stored, so the
// slot never hands out less than the stored position covers; it is a
// shortcut for the replay (the transactions below it are skipped without
// a look at their messages), not its guarantee.
func (s *source) pushLoop(ctx context.Context, slot *pgwire.Slot, key string, txns <-chan pgwire.Txn) error {
	done, err := s.loadMarks(ctx, key)
	if err != nil {
		return err
	}
	items := make([]jsonapi.Item, 0, s.r.cfg.MaxBatch)
	var end uint64    // the last transaction whose every message is in items
	var pushed uint64 // the last transaction whose every message is stored
	var saved uint64
	var savedAt time.Time
	save := func(ctx context.Context) error {
		if pushed == saved {
			return nil
		}
		if err := s.r.cfg.Positions.SaveRelayPosition(ctx, key, pushed); err != nil {
			return err
		}
		saved, savedAt = pushed, time.Now()
		slot.Confirm(saved)
		return nil
	}
	defer func() { _ = save(context.Background()) }() // what the session pushed, for the next one; best effort
	flush := func() error {
		if err := s.push(ctx, items); err != nil {
			return err
		}
		s.relayed.Add(uint64(len(items)))
		// A new slice, never items[:0]: the push call still reads the
		// items after it answered (the announcement of what it wrote).
		items = make([]jsonapi.Item, 0, s.r.cfg.MaxBatch)
		if end == 0 {
			return nil
		}
		pushed, end = end, 0
		s.mu.Lock()
		for len(s.pending) > 0 && s.pending[0].end <= pushed {
			s.pending = s.pending[1:]
		}
		s.mu.Unlock()
		if time.Since(savedAt) >= positionEvery {
			return save(context.WithoutCancel(ctx))
		}
		return nil
	}
	tick := time.NewTicker(positionEvery) // an idle relay stores and confirms what it pushed last
	defer tick.Stop()
	for {
		var t pgwire.Txn
		select {
		case t = <-txns:
		case <-tick.C:
			if err := save(ctx); err != nil {
				return err
			}
			continue
		case <-ctx.Done():
			return nil
		}
		for {
			for i, content := range t.Messages {
				it, err := decode(content, walTransactionID(slot.SystemID(), t.CommitLSN, i))
				it.Mark = &jsonapi.Mark{Slot: key, LSN: t.CommitLSN, Index: int32(i)}
				switch {
				case err != nil:
					s.skipped.Add(1)
					s.log.Error().Err(err).Str("commit", lsnText(t.CommitLSN)).Int("index", i).Msg("publish: a message that cannot be pushed; skipped")
				case done.stored(&it):
					// Stored before a crash (a replay): its partition's
					// mark is at or past it.
				default:
					items = append(items, it)
				}
				if i == len(t.Messages)-1 {
					end = t.EndLSN
				}
				if len(items) == s.r.cfg.MaxBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			// More waiting: into the same push.
			select {
			case t = <-txns:
				continue
			default:
			}
			break
		}
		if len(items) > 0 || end != 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// positionEvery is how often the relayed position is stored while the
// relay pushes, and confirmed to the slot: a replay skips the
// transactions below it without looking at their messages.
const positionEvery = time.Second

// push pushes items until every one is stored (queued, duplicate, or
// buffered in the spool), trying again every Retry, and gives up only
// when ctx ends. A try again carries the items the last attempt did not
// store (all of them when the push was refused as a whole, which submits
// nothing); those it stored are not pushed again, however long the
// failure lasted. The marks are not what decides it here: a partition's
// later segment may be stored after an earlier one of the same push
// failed, and its mark would cover the failed messages.
func (s *source) push(ctx context.Context, items []jsonapi.Item) error {
	for len(items) > 0 {
		// Not cancelled by Stop: a push under way is answered, and its
		// position confirmed, before the session ends.
		status, results := s.r.cfg.Push.PushItems(context.WithoutCancel(ctx), Transport, tenancy.TenantID{}, items)
		left, failed := items, "the push was refused"
		if len(results) == len(items) {
			left, failed = nil, ""
			for i, r := range results {
				if r.Status == jsonapi.StatusFailed || r.Error != "" {
					left, failed = append(left, items[i]), r.Error
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		s.log.Warn().Int("status", status).Str("error", failed).Int("items", len(left)).Msg("publish: push failed; trying again")
		if !sleep(ctx, s.r.cfg.Retry) {
			return ctx.Err()
		}
		items = left // a new slice, or the refused one: the push path may still read the old
	}
	return nil
}

func lsnText(lsn uint64) string { return pgwire.LSNText(lsn) }
