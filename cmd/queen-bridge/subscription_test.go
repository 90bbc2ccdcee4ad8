package main

import (
	"strings"
	"testing"
)

// QUEEN_DEFAULT_SUBSCRIPTION_MODE takes all, new and new-only (default
// all); anything else stops the start with an error naming it, since a
// typo there would silently replay whole queues to new groups.
func TestDefaultSubscriptionModeSetting(t *testing.T) {
	c, err := load(nil)
	if err != nil || c.defaultSubscriptionMode != "all" {
		t.Fatalf("default: %+v %v", c, err)
	}
	for _, v := range []string{"all", "new", "new-only"} {
		if c, err := load([]string{"-default-subscription-mode", v}); err != nil || c.defaultSubscriptionMode != v {
			t.Fatalf("%s: %v", v, err)
		}
	}
	t.Setenv("QUEEN_DEFAULT_SUBSCRIPTION_MODE", "from_beginning")
	if _, err := load(nil); err == nil || !strings.Contains(err.Error(), "QUEEN_DEFAULT_SUBSCRIPTION_MODE") {
		t.Fatalf("from_beginning: %v", err)
	}
}
