package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// subscriptions are a room's queue subscriptions, each with the signal it
// gives once drained. The Intake and the API own one each; only their
// Start and Stop touch it.
type subscriptions struct {
	subs   []*nats.Subscription
	closed []<-chan nats.SubStatus // per subscription: closed after its drain
}

// add subscribes fn to subject in QueueGroup.
func (s *subscriptions) add(nc *nats.Conn, subject string, fn nats.MsgHandler) error {
	sub, err := nc.QueueSubscribe(subject, QueueGroup, fn)
	if err != nil {
		return err
	}
	s.subs = append(s.subs, sub)
	s.closed = append(s.closed, sub.StatusChanged(nats.SubscriptionClosed))
	return nil
}

// drain drains every subscription (the server sends no more; what was
// delivered is still handled) and waits, within ctx, for the drains.
func (s *subscriptions) drain(ctx context.Context) []error {
	var errs []error
	for _, sub := range s.subs {
		if err := sub.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, fmt.Errorf("jetstream: drain %s: %w", sub.Subject, err))
		}
	}
	for i, ch := range s.closed {
		select {
		case <-ch:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("jetstream: drain %s: %w", s.subs[i].Subject, ctx.Err()))
		}
	}
	return errs
}
