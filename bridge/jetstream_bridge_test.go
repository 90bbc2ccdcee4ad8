package bridge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/segment"
)

// What the bridge adds to a JetStream stream's behaviour, or does in its
// own way: the read API marks base64 payloads (over HTTP and NATS fetch),
// Queen-Partition picks the partition, the answers are counted.

func TestJetStreamReadsMarkBase64OverHTTPAndNATS(t *testing.T) {
	tg := bridgeTarget(t, nodeOpts{})
	ctx := jsCtx(t)
	j := tg.js(t)
	stream, subject := tg.fresh(t)
	for _, b := range []string{"\x00binary\xff", `"a JSON string"`} {
		if _, err := j.Publish(ctx, subject, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	_, viaHTTP := tg.bridge.get(fmt.Sprintf("/api/v1/messages?queue=%s&partition=%s", stream, partitionOf(subject)))
	reply, err := tg.nc.Request(tg.bridge.prefix+".v1.fetch", []byte(fmt.Sprintf(`{"queue":%q,"partition":%q}`, stream, partitionOf(subject))), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for via, body := range map[string][]byte{"HTTP": viaHTTP, "NATS fetch": reply.Data} {
		var page struct{ Messages []map[string]json.RawMessage }
		if err := json.Unmarshal(body, &page); err != nil || len(page.Messages) != 2 {
			t.Fatalf("%s: %s", via, body)
		}
		if enc := string(page.Messages[0]["encoding"]); enc != `"base64"` || string(page.Messages[0]["payload"]) != `"AGJpbmFyef8="` {
			t.Fatalf("%s: the binary body reads %s", via, body)
		}
		if _, marked := page.Messages[1]["encoding"]; marked || string(page.Messages[1]["payload"]) != `"a JSON string"` {
			t.Fatalf("%s: the JSON string reads %s", via, body)
		}
	}
}

func TestJetStreamQueenPartitionOverridesTheSubject(t *testing.T) {
	tg := bridgeTarget(t, nodeOpts{})
	ctx := jsCtx(t)
	stream, subject := tg.fresh(t)
	msg := nats.NewMsg(subject)
	msg.Header.Set("Queen-Partition", "vip-"+randHex(3))
	msg.Data = []byte(`{"vip":true}`)
	ack, err := tg.js(t).PublishMsg(ctx, msg, js.WithMsgID("v1"))
	if err != nil || ack.Sequence != 1 || ack.Stream != stream {
		t.Fatalf("%+v %v", ack, err)
	}
	if got := readPartition(t, tg.bridge, stream, msg.Header.Get("Queen-Partition")); len(got) != 1 || got[0].msgID != "v1" {
		t.Fatalf("the header's partition holds %+v", got)
	}
	if got := readPartition(t, tg.bridge, stream, partitionOf(subject)); len(got) != 0 {
		t.Fatalf("the subject's partition holds %+v", got)
	}
	// A partition the name rules refuse is refused, naming the header.
	msg.Header.Set("Queen-Partition", strings.Repeat("p", 256))
	_, err = tg.js(t).PublishMsg(ctx, msg, js.WithMsgID("v2"))
	if e := apiError(t, err); e.Code != 400 || !strings.Contains(e.Description, "Queen-Partition") {
		t.Fatalf("a long partition: %+v", e)
	}
}

// The outcome counters move with the answers.
func TestJetStreamMetricsCountOutcomes(t *testing.T) {
	tg := bridgeTarget(t, nodeOpts{})
	ctx := jsCtx(t)
	j := tg.js(t)
	stream, subject := tg.fresh(t)
	for _, id := range []string{"a", "a"} {
		if _, err := j.Publish(ctx, subject, []byte(`{}`), js.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := j.Publish(ctx, subject, []byte(`{}`), js.WithExpectStream("NOT_"+stream)); err == nil {
		t.Fatal("mismatch accepted")
	}
	for outcome, want := range map[string]float64{"queued": 1, "duplicate": 1, "refused": 1, "buffered": 0, "failed": 0} {
		if v := metricValue(t, tg.bridge, `queen_jetstream_messages_total{outcome="`+outcome+`"}`); v != want {
			t.Errorf("%s: %v, want %v", outcome, v, want)
		}
	}
	if v := metricValue(t, tg.bridge, `queen_push_requests_total{transport="jetstream"}`); v != 2 {
		t.Errorf("push requests over jetstream: %v", v)
	}
}

// jsPublishAll publishes one message per id and returns the acks; a
// publish that fails fails the test.
func jsPublishAll(t *testing.T, j js.JetStream, subject string, ids ...string) []*js.PubAck {
	t.Helper()
	var acks []*js.PubAck
	for _, id := range ids {
		ack, err := j.Publish(jsCtx(t), subject, []byte(`{"id":"`+id+`"}`), js.WithMsgID(id))
		if err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
		acks = append(acks, ack)
	}
	return acks
}

// bufferedReply publishes one message as a bare request and returns the
// answer's body, for what the clients do not show (the buffered flag).
func bufferedReply(t *testing.T, tg *jsTarget, subject, id string) map[string]any {
	t.Helper()
	msg := nats.NewMsg(subject)
	msg.Header.Set("Nats-Msg-Id", id)
	msg.Data = []byte(`{"id":"` + id + `"}`)
	reply, err := tg.nc.RequestMsg(msg, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(reply.Data, &out); err != nil {
		t.Fatalf("%s: %v", reply.Data, err)
	}
	return out
}

// wantStoredOnce: every id is stored exactly once in the queue, and nothing
// else is.
func wantStoredOnce(t *testing.T, n *node, queue string, ids ...string) {
	t.Helper()
	stored := storedTxids(t, n, queue)
	for _, id := range ids {
		if stored[id] != 1 {
			t.Fatalf("%s stored %d times (%v)", id, stored[id], stored)
		}
	}
	if len(stored) != len(ids) {
		t.Fatalf("stored %v, want %v", stored, ids)
	}
}

// PostgreSQL down: publishes are answered buffered (a PubAck of sequence
// 0 that says "buffered":true), and after the restart the drain stores each
// once; publishing the same ids again then answers duplicates.
func TestJetStreamBufferedWhilePostgresIsDown(t *testing.T) {
	pg := startOwnPostgres(t)
	tg := bridgeTarget(t, nodeOpts{dsn: pg.DSN(), stmtTO: 2 * time.Second})
	j := tg.js(t)
	stream, subject := tg.fresh(t)
	if acks := jsPublishAll(t, j, subject, "before"); acks[0].Sequence != 1 {
		t.Fatalf("before the stop: %+v", acks[0])
	}
	pg.kill(t)
	for _, ack := range jsPublishAll(t, j, subject, "d1", "d2", "d3") {
		if ack.Stream != stream || ack.Sequence != 0 {
			t.Fatalf("with PostgreSQL down: %+v", ack)
		}
	}
	if r := bufferedReply(t, tg, subject, "d4"); r["buffered"] != true || r["seq"] != float64(0) || r["stream"] != stream {
		t.Fatalf("the buffered answer: %v", r)
	}
	pg.start(t)
	waitUntil(t, "the spool to drain", 60*time.Second, func() bool { return tg.bridge.sp.Stats().Records == 0 })
	wantStoredOnce(t, tg.bridge, stream, "before", "d1", "d2", "d3", "d4")
	for _, ack := range jsPublishAll(t, j, subject, "d1", "d4") {
		if !ack.Duplicate || ack.Sequence < 2 || ack.Sequence > 5 {
			t.Fatalf("a buffered id again: %+v", ack)
		}
	}
	wantStoredOnce(t, tg.bridge, stream, "before", "d1", "d2", "d3", "d4")
}

// Maintenance mode: publishes are answered buffered and nothing reaches
// PostgreSQL; when it ends they are stored once. When the spool cannot take
// a message either, the publish is an API error the client surfaces (503,
// 10077), never an acknowledgement.
func TestJetStreamMaintenanceBuffersAndAFailedWriteIsAnError(t *testing.T) {
	tg := bridgeTarget(t, nodeOpts{})
	j := tg.js(t)
	stream, subject := tg.fresh(t)
	n := tg.bridge
	if status, out := n.post("/api/v1/system/maintenance", []byte(`{"enabled": true}`)); status != http.StatusOK {
		t.Fatalf("enable: %d %s", status, out)
	}
	for _, ack := range jsPublishAll(t, j, subject, "m1", "m2") {
		if ack.Sequence != 0 || ack.Stream != stream {
			t.Fatalf("in maintenance: %+v", ack)
		}
	}
	if r := bufferedReply(t, tg, subject, "m3"); r["buffered"] != true {
		t.Fatalf("in maintenance: %v", r)
	}
	if c := n.count(`SELECT count(*) FROM queen.log_segments`); c != 0 {
		t.Fatalf("%d segments written in maintenance mode", c)
	}
	if status, out := n.post("/api/v1/system/maintenance", []byte(`{"enabled": false}`)); status != http.StatusOK {
		t.Fatalf("disable: %d %s", status, out)
	}
	waitUntil(t, "the spool to drain", 30*time.Second, func() bool { return n.sp.Stats().Records == 0 })
	wantStoredOnce(t, n, stream, "m1", "m2", "m3")

	full := bridgeTarget(t, nodeOpts{spoolMax: 10})
	fj := full.js(t)
	_, subject = full.fresh(t)
	if status, _ := full.bridge.post("/api/v1/system/maintenance", []byte(`{"enabled": true}`)); status != http.StatusOK {
		t.Fatal("enable maintenance")
	}
	_, err := fj.Publish(jsCtx(t), subject, []byte(`{}`), js.WithMsgID("lost"))
	if e := apiError(t, err); e.Code != 503 || e.ErrorCode != 10077 || !strings.Contains(e.Description, "spool write failed") {
		t.Fatalf("a failed write: %+v", e)
	}
	// PublishAsync surfaces it too, on the future.
	f, err := fj.PublishAsync(subject, []byte(`{}`), js.WithMsgID("lost-async"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ack := <-f.Ok():
		t.Fatalf("acknowledged: %+v", ack)
	case err := <-f.Err():
		if e := apiError(t, err); e.ErrorCode != 10077 {
			t.Fatalf("async: %+v", e)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no answer")
	}
	if v := metricValue(t, full.bridge, `queen_jetstream_messages_total{outcome="failed"}`); v != 2 {
		t.Fatalf("failed outcomes %v", v)
	}
	if c := full.bridge.count(`SELECT count(*) FROM queen.log_segments`); c != 0 {
		t.Fatalf("%d segments written", c)
	}
}

// On an encrypted queue a body that is not JSON is sealed like any
// payload, keeps its base64 mark, and reads back exactly.
func TestJetStreamBase64BodyOnAnEncryptedQueue(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	tg := bridgeTarget(t, nodeOpts{keys: map[uint8][]byte{1: key}})
	stream, subject := tg.fresh(t)
	if status, out := tg.bridge.post("/api/v1/configure", []byte(`{"queue":"`+stream+`","options":{"encryptionEnabled":true}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	body := []byte("\x00secret\xfe")
	if ack, err := tg.js(t).Publish(jsCtx(t), subject, body, js.WithMsgID("s1")); err != nil || ack.Sequence != 1 {
		t.Fatalf("%+v %v", ack, err)
	}
	f := storedFrame(t, tg.bridge, stream, partitionOf(subject), 1)
	if f.Flags&segment.FlagEncrypted == 0 || f.Flags&segment.FlagBase64 == 0 || bytes.Contains(f.Payload, []byte("AHNlY3JldP4")) {
		t.Fatalf("stored flags %b, payload %q", f.Flags, f.Payload)
	}
	wantStored(t, tg, stream, subject, storedMsg{msgID: "s1", body: body})
}
