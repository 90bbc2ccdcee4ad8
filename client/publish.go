package client

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Execer is what Publish writes through: anything with pgx's Exec, such as
// a pgx.Tx (T is its command tag type, inferred from the argument).
// database/sql's *sql.Tx names it ExecContext: call queen.publish there
// yourself (docs/publish.md).
type Execer[T any] interface {
	Exec(ctx context.Context, sql string, args ...any) (T, error)
}

// publishSQL calls the jsonb form of queen.publish.
const publishSQL = `SELECT queen.publish($1, $2, $3::jsonb, $4, $5)`

// Publish writes it as a message of the transaction tx belongs to: the
// bridge stores it when, and only when, that transaction commits, in
// commit order (docs/publish.md). It is the same Item as Push's: Partition
// "" is Default, Payload nil is null, TransactionID "" lets the bridge
// derive one from the message's place in the WAL (so a replay is
// recognised). Nothing goes to the bridge from here, and nothing is
// retried: an error is the database's, and fails the transaction as any
// statement's error does. It checks the names first, as the bridge would,
// so a bad item is refused before it reaches the database.
func Publish[T any](ctx context.Context, tx Execer[T], it Item) error {
	if err := checkPublishName("queue", it.Queue, true); err != nil {
		return err
	}
	for _, f := range []struct{ name, value string }{{"partition", it.Partition}, {"transactionId", it.TransactionID}, {"traceId", it.TraceID}} {
		if err := checkPublishName(f.name, f.value, false); err != nil {
			return err
		}
	}
	payload := "null"
	if it.Payload != nil {
		payload = string(it.Payload)
	}
	if _, err := tx.Exec(ctx, publishSQL, it.Queue, orNull(it.Partition), payload, orNull(it.TransactionID), orNull(it.TraceID)); err != nil {
		return fmt.Errorf("client: publish to %s: %w", it.Queue, err)
	}
	return nil
}

// orNull is s, or SQL NULL for "" (the function's default).
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// checkPublishName applies the push's name rules: 1..255 bytes of UTF-8,
// no control characters; "" is allowed where the field is optional.
func checkPublishName(name, v string, required bool) error {
	if v == "" {
		if required {
			return errors.New("client: publish: " + name + " is required")
		}
		return nil
	}
	if len(v) > 255 || !utf8.ValidString(v) {
		return fmt.Errorf("client: publish: %s must be 1..255 bytes of UTF-8", name)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("client: publish: %s must not contain control characters", name)
		}
	}
	return nil
}
