package every

import (
	"testing"
	"time"
)

func TestOnePerPeriod(t *testing.T) {
	l := New(time.Hour)
	if !l.Allow() {
		t.Fatal("the first event must pass")
	}
	for i := 0; i < 100; i++ {
		if l.Allow() {
			t.Fatal("a second event inside the period passed")
		}
	}
	l.next.Store(time.Now().Add(-time.Second).UnixNano()) // the period has passed
	if !l.Allow() {
		t.Fatal("an event after the period must pass")
	}
}
