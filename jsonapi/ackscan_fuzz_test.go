package jsonapi

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzScanAcks holds the acknowledgement scanner to encoding/json: on every
// route, for any body it reads, the same acknowledgements or the same error
// text (sameAsJSON). That it reads the bodies clients send is
// TestScanAcksReadsClientBodies.
func FuzzScanAcks(f *testing.F) {
	for _, c := range ackBodies {
		f.Add([]byte(c.body))
	}
	for _, c := range clientAckBodies {
		f.Add([]byte(c.body))
	}
	f.Add(ackBatchBody(3))
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsJSON(t, body)
	})
}

// parseUUIDBefore is ParseUUID as it was before its walk without
// allocation, the reference it is held to (the id aside, which it left
// half filled with an error).
func parseUUIDBefore(s string) ([16]byte, bool) {
	var id [16]byte
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 {
		return id, false
	}
	for i := 0; i < 16; i++ {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return id, false
		}
		id[i] = byte(v)
	}
	return id, true
}

// FuzzParseUUID holds ParseUUID to its reference.
func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{uuidAText, uuidBText, "0123456789abcdef0123456789abcdef", "-0123456789abcdef0123456789abcdef---",
		"01234567-89ab-cdef-0123-456789abcdeg", "0123456-789ab-cdef-0123-456789abcdef", "01234567-89ab-cdef-0123-456789abc+ef", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, ok := parseUUIDBefore(s)
		got, err := ParseUUID(s)
		if (err == nil) != ok || ok && got != want {
			t.Fatalf("%q: ParseUUID %x, %v; before %x, %v", s, got, err, want, ok)
		}
		if err != nil && (err.Error() != "not a UUID: "+strconv.Quote(s) || got != [16]byte{}) {
			t.Fatalf("%q: ParseUUID %x, %v", s, got, err)
		}
	})
}
