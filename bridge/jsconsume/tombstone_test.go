package jsconsume_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// A message deleted through either bridge is not delivered from the copy
// the consumer's owner holds in memory: the first fetch reads the
// partition's three messages into the owner's memory and hands one; the
// second message is deleted through one bridge, then the other in a second
// round, so one of the two deletes reaches the owner through its peer.
func TestJetStreamTombstoneReachesTheOwnerOnTwoBridges(t *testing.T) {
	tgs := twoBridges(t)
	c := newConsumeCase(t, tgs[0])
	cons := c.durable(t, "tomb", js.ConsumerConfig{})
	for round, via := range tgs {
		part := fmt.Sprintf("r%d", round)
		for i := 1; i <= 3; i++ {
			c.publish(t, c.subject(part), fmt.Sprintf("%s-%d", part, i))
		}
		first := fetch(t, cons, 1, 5*time.Second)
		if got := ids(t, first); len(got) != 1 || got[0] != part+"-1" {
			t.Fatalf("round %d: the first fetch handed %v", round, got)
		}
		if err := first[0].Ack(); err != nil {
			t.Fatal(err)
		}
		pid := strings.Split(first[0].Reply(), ".")[3] // $JS.ACK._.<partition id>.…
		deleteMessage(t, via.bridge.http, pid, c.msgID(part+"-2"))
		other := tgs[1-round]
		testkit.WaitFor(t, "the other bridge to hear the delete", time.Minute, func() bool {
			return promValue(other.bridge.http, "queen_message_deleted_received_total") == 1
		})
		rest := fetch(t, cons, 2, 2*time.Second)
		if got := ids(t, rest); len(got) != 1 || got[0] != part+"-3" {
			t.Fatalf("round %d, deleted through bridge %d: after the delete the consumer handed %v, want [%s-3]", round, round, got, part)
		}
		if err := rest[0].Ack(); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteMessage tombstones the message transactionId txid of partition pid
// through the bridge at addr.
func deleteMessage(t *testing.T, addr, pid, txid string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, "http://"+addr+"/api/v1/messages/"+pid+"/"+txid, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"success":true`) {
		t.Fatalf("delete %s/%s: %d %s", pid, txid, resp.StatusCode, body)
	}
}
