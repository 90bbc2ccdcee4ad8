package testkit

import (
	"context"
	"testing"
)

// Lifecycle is a room's Start and Stop.
type Lifecycle interface {
	Start(context.Context) error
	Stop(context.Context) error
}

// Started takes what a room's constructor returned, fails the test on its
// error or on Start's, and stops the room when the test ends.
func Started[T Lifecycle](t testing.TB, room T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := room.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = room.Stop(context.Background()) })
	return room
}
