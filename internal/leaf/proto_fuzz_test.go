package leaf

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzHubProtocol: whatever the hub sends, the reader returns lines and
// errors, never panics, and keeps the interest set consistent (its count
// of queue groups is what the maps hold).
func FuzzHubProtocol(f *testing.F) {
	for _, seed := range []string{
		"INFO {\"server_id\":\"x\",\"info_on_connect\":true}\r\nPING\r\nPONG\r\n",
		"LS+ _INBOX.a\r\nLS+ work.* workers 3\r\nLS- work.* workers\r\nLS- _INBOX.a\r\n",
		"LMSG a b 3\r\nabc\r\nHMSG a + r q 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
		"-ERR 'Authorization Violation'\r\n+OK\r\n",
		"LS+\r\nLS- a b c\r\nLMSG a -1\r\nXYZ\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 64)
		in := newInterest()
		for {
			line, err := readLine(br)
			if err != nil {
				break
			}
			o, err := parseOp(line)
			if err != nil {
				continue
			}
			switch o.kind {
			case opSub:
				in.add(o.subject, o.queue, o.weight)
			case opUnsub:
				in.remove(o.subject, o.queue)
			case opMsg:
				_ = skipPayload(br, o.size)
			}
		}
		n := 0
		for _, tab := range []map[string]*subjectSubs{in.literal, in.wild} {
			for subject, s := range tab {
				n += len(s.queues)
				if !s.plain && len(s.queues) == 0 {
					t.Fatalf("%q kept with no subscription", subject)
				}
			}
		}
		if n != in.queues {
			t.Fatalf("queue count %d, maps hold %d", in.queues, n)
		}
	})
}
