package leaf

import (
	"slices"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, subject string
		want             bool
	}{
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
		{"a.b", "a.b.c", false},
		{"a.*", "a.b", true},
		{"a.*", "a", false},
		{"a.*", "a.b.c", false},
		{"*.b", "a.b", true},
		{"a.>", "a.b", true},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{">", "a.b", true},
		{"a.*.c", "a.x.c", true},
		{"a.*.c", "a.x.d", false},
		{"_INBOX.abc.*", "_INBOX.abc.req1", true},
	} {
		if got := Match(tc.pattern, tc.subject); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
		}
	}
}

// A wild subject's literal prefix is what every subject it matches starts
// with; queueGroups and matches skip a pattern whose prefix a subject
// lacks, so a prefix too long would lose deliveries to queue groups.
func TestLiteralPrefix(t *testing.T) {
	for _, tc := range []struct{ pattern, prefix string }{
		{"a.b", "a.b"},
		{"a.*", "a."},
		{"a.*.c", "a."},
		{"a.b.>", "a.b."},
		{">", ""},
		{"*.b", ""},
		{"a*.b", "a*.b"}, // * inside a token is a literal character
		{"a.b>", "a.b>"},
	} {
		if got := literalPrefix(tc.pattern); got != tc.prefix {
			t.Errorf("literalPrefix(%q) = %q, want %q", tc.pattern, got, tc.prefix)
		}
		if wild := tc.prefix != tc.pattern; hasWildcard(tc.pattern) != wild {
			t.Errorf("hasWildcard(%q) = %v, want %v", tc.pattern, !wild, wild)
		}
	}
	in := newInterest()
	in.add("$JS.ACK.>", "q1", 1)
	in.add("*.b", "q2", 1)
	in.add("a.*", "q3", 1)
	if got := in.queueGroups(nil, "a.b"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"q2", "q3"}) {
		t.Fatalf("queue groups of a.b: %v, want q2 and q3", got)
	}
	if got := in.queueGroups(nil, "_INBOX.x.y"); len(got) != 0 {
		t.Fatalf("queue groups of an inbox: %v, want none", got)
	}
	if !in.matches("$JS.ACK.s.c") || in.matches("$JS.AC.s") {
		t.Fatal("matches by prefix")
	}
}

// The set keeps keys, not counts (the hub counts), and reports after a
// reconnection what the new snapshot no longer has.
func TestInterestSet(t *testing.T) {
	in := newInterest()
	in.add("a.b", "", 0)
	in.add("a.b", "q", 3)
	in.add("w.*", "", 0)
	in.add("w.*", "g", 1)
	if !in.matches("a.b") || !in.matches("w.x") || in.matches("w.x.y") {
		t.Fatal("matches")
	}
	if got := in.queueGroups(nil, "w.x"); len(got) != 1 || got[0] != "g" {
		t.Fatalf("queue groups of w.x: %v", got)
	}
	if in.remove("a.b", "") {
		t.Fatal("a.b gone while its queue group is left")
	}
	in.add("a.b", "q", 5) // a new weight: no second group
	if in.queues != 2 {
		t.Fatalf("%d queue groups, want 2", in.queues)
	}
	if !in.remove("a.b", "q") || in.matches("a.b") {
		t.Fatal("a.b has no subscription left")
	}
	if in.remove("never", "") {
		t.Fatal("an LS- for an unknown subject removed something")
	}
	// A wild subject's queue groups come and go with it; its plain
	// subscription is no queue group.
	in.add("w.>", "h", 1)
	in.add("w.*", "g2", 1)
	if got := in.queueGroups(nil, "w.x"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"g", "g2", "h"}) {
		t.Fatalf("queue groups of w.x with three: %v", got)
	}
	in.remove("w.*", "g")
	in.remove("w.*", "g2")
	in.remove("w.>", "h")
	if got := in.queueGroups(nil, "w.x"); len(got) != 0 || len(in.wildQueued) != 0 || !in.matches("w.x") {
		t.Fatalf("queue groups of w.x after their removal: %v (wild with queues %v); the plain w.* stays", got, in.wildQueued)
	}
	next := newInterest()
	next.add("w.x", "", 0)
	old := newInterest()
	old.add("w.x", "", 0)
	old.add("gone", "", 0)
	old.add("z.>", "", 0)
	got := next.lostSince(old)
	if len(got) != 2 || !slices.Contains(got, "gone") || !slices.Contains(got, "z.>") {
		t.Fatalf("lost %v, want gone and z.>", got)
	}
}
