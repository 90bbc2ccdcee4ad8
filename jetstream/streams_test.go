package jetstream

import (
	"errors"
	"strings"
	"testing"
)

func TestParseStreams(t *testing.T) {
	got, err := ParseStreams(" ORDERS = orders.> ; eu.orders , AUDIT=audit.*.events,,")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "ORDERS" || strings.Join(got[0].Filters, "|") != "orders.>|eu.orders" ||
		got[1].Name != "AUDIT" || strings.Join(got[1].Filters, "|") != "audit.*.events" {
		t.Fatalf("parsed %+v", got)
	}
	if s := FormatStreams(got); s != "ORDERS=orders.>;eu.orders,AUDIT=audit.*.events" {
		t.Fatalf("formatted %q", s)
	}
	if none, err := ParseStreams(""); err != nil || len(none) != 0 {
		t.Fatalf("empty: %v %v", none, err)
	}
	for _, c := range []struct{ text, want string }{
		{"ORDERS", "entry 1"},
		{"=orders.>", "stream name"},
		{"OR.DERS=orders.>", `"OR.DERS"`},
		{"ORDERS=", "no filter"},
		{"ORDERS=orders..x", "empty token"},
		{"ORDERS=orders.>.x", "'>' must be the last"},
		{"ORDERS=orders.a*", "whole tokens"},
		{"ORDERS=orders. x", "white space"},
		{"A=a,B=b c", "white space"},
	} {
		if _, err := ParseStreams(c.text); !errors.Is(err, ErrStreams) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want ErrStreams naming %q", c.text, err, c.want)
		}
	}
}

// Overlaps are start-up errors that name both sides.
func TestCheckNamesBothSidesOfAnOverlap(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string // "" when fine
	}{
		{"ORDERS=orders.>,AUDIT=audit.*.events", nil},
		{"ORDERS=orders.*,DEEP=orders.a.b", nil}, // * is one token: orders.a.b is not orders.*
		{"ORDERS=orders.>,ALL=orders", nil},      // > needs one more token
		{"ORDERS=orders.>,EU=orders.eu", []string{"stream EU filter orders.eu", "stream ORDERS filter orders.>"}},
		{"ORDERS=orders.*.x,EU=orders.eu.*", []string{"stream EU filter orders.eu.*", "stream ORDERS filter orders.*.x"}},
		{"ORDERS=orders.>;orders.eu", []string{"stream ORDERS filter orders.eu", "stream ORDERS filter orders.>"}},
		{"ALL=>", []string{"stream ALL filter >", "the bridge's own subjects queen.>"}},
		{"Q=queen.v1.push", []string{"stream Q filter queen.v1.push", "queen.>"}},
		{"Q=*.v1.fetch", []string{"stream Q filter *.v1.fetch", "queen.>"}},
		{"API=$JS.API.>", []string{"stream API filter $JS.API.>", "$JS.>"}},
		{"IN=_INBOX.*", []string{"stream IN filter _INBOX.*", "_INBOX.>"}},
		{"A=a.>,A=b.>", []string{"stream A is defined twice"}},
	} {
		streams, err := ParseStreams(c.text)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		err = Check(streams, "queen")
		if c.want == nil {
			if err != nil {
				t.Errorf("%q: %v", c.text, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q: accepted", c.text)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %v does not name %q", c.text, err, w)
			}
		}
	}
	// The prefix is the bridge's, whatever it is.
	streams, _ := ParseStreams("Q=queen.>")
	if err := Check(streams, "other"); err != nil {
		t.Errorf("queen.> beside prefix other: %v", err)
	}
	if err := Check(streams, "queen"); !errors.Is(err, ErrOverlap) {
		t.Errorf("queen.> beside prefix queen: %v", err)
	}
}

func TestPartitionFromSubject(t *testing.T) {
	for _, c := range []struct{ filter, subject, want string }{
		{"orders.>", "orders.eu.42", "eu.42"},
		{"orders.>", "orders.eu", "eu"},
		{"audit.*.events", "audit.eu.events", "eu"},
		{"a.*.*.b", "a.x.y.b", "x.y"},
		{"a.*.b.*", "a.x.b.y", "x.y"},
		{"a.*.b.>", "a.x.b.y.z", "x.y.z"},
		{"*", "solo", "solo"},
		{"a.*", "a", ""}, // not a subject of the filter
	} {
		tokens, err := parseFilter(c.filter)
		if err != nil {
			t.Fatal(err)
		}
		f := &filter{text: c.filter, tokens: tokens, wild: true}
		if got := f.partition(c.subject); got != c.want {
			t.Errorf("%s on %s: %q, want %q", c.filter, c.subject, got, c.want)
		}
	}
	// One run of tokens is a substring of the subject: nothing allocated.
	tokens, _ := parseFilter("orders.>")
	f := &filter{tokens: tokens, wild: true}
	if n := testing.AllocsPerRun(100, func() { _ = f.partition("orders.eu.42") }); n != 0 {
		t.Errorf("%v allocations per partition", n)
	}
}
