package bridge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

func jsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// apiError is the JetStream API error a publish failed with.
func apiError(t *testing.T, err error) *js.APIError {
	t.Helper()
	var e *js.APIError
	if !errors.As(err, &e) {
		t.Fatalf("want a JetStream API error, got %v", err)
	}
	return e
}

// wantStored checks the case's place holds exactly these messages, in
// order: Nats-Msg-Id and body.
func wantStored(t *testing.T, tg *jsTarget, stream, subject string, want ...storedMsg) {
	t.Helper()
	got := tg.stored(t, stream, subject)
	if len(got) != len(want) {
		t.Fatalf("%d messages stored, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].seq != uint64(i+1) || got[i].msgID != want[i].msgID || !bytes.Equal(got[i].body, want[i].body) {
			t.Fatalf("message %d: seq %d id %q body %q; want seq %d id %q body %q", i, got[i].seq, got[i].msgID, got[i].body,
				i+1, want[i].msgID, want[i].body)
		}
	}
}

// Publish answers the stream's name and the sequence (the bridge: the
// offset in the partition); the same Nats-Msg-Id again answers Duplicate
// with the first sequence and writes nothing. Through nats.go's jetstream
// API and through the legacy JetStream context alike.
func TestJetStreamPublishAnswersStreamSequenceAndDuplicate(t *testing.T) {
	forTargets(t, func(t *testing.T, tg *jsTarget) {
		ctx := jsCtx(t)
		j := tg.js(t)
		stream, subject := tg.fresh(t)
		for _, c := range []struct {
			id, body string
			seq      uint64
			dup      bool
		}{{"a", `{"n":1}`, 1, false}, {"b", `{"n":2}`, 2, false}, {"a", `{"n":"again"}`, 1, true}} {
			ack, err := j.Publish(ctx, subject, []byte(c.body), js.WithMsgID(c.id))
			if err != nil {
				t.Fatalf("publish %s: %v", c.id, err)
			}
			if ack.Stream != stream || ack.Sequence != c.seq || ack.Duplicate != c.dup {
				t.Fatalf("publish %s: %+v, want stream %s seq %d duplicate %v", c.id, ack, stream, c.seq, c.dup)
			}
		}
		wantStored(t, tg, stream, subject, storedMsg{msgID: "a", body: []byte(`{"n":1}`)}, storedMsg{msgID: "b", body: []byte(`{"n":2}`)})

		stream, subject = tg.fresh(t)
		legacy := tg.legacy(t)
		for _, c := range []struct {
			id  string
			seq uint64
			dup bool
		}{{"l1", 1, false}, {"l1", 1, true}, {"l2", 2, false}} {
			ack, err := legacy.Publish(subject, []byte(`"legacy"`), nats.MsgId(c.id))
			if err != nil {
				t.Fatalf("legacy publish %s: %v", c.id, err)
			}
			if ack.Stream != stream || ack.Sequence != c.seq || ack.Duplicate != c.dup {
				t.Fatalf("legacy publish %s: %+v, want stream %s seq %d duplicate %v", c.id, ack, stream, c.seq, c.dup)
			}
		}
		wantStored(t, tg, stream, subject, storedMsg{msgID: "l1", body: []byte(`"legacy"`)}, storedMsg{msgID: "l2", body: []byte(`"legacy"`)})
	})
}

// A Nats-Expected-Stream other than the stream's name is the client's API
// error 10060; a condition the stream cannot meet (the bridge: an
// unsupported Nats-Expected-* header, named) is an API error 400; a
// per-message TTL is 10166 on a stream without TTLs. Nothing is written for
// any of them.
func TestJetStreamRefusalsAreAPIErrorsAndWriteNothing(t *testing.T) {
	forTargets(t, func(t *testing.T, tg *jsTarget) {
		ctx := jsCtx(t)
		j := tg.js(t)
		stream, subject := tg.fresh(t)
		_, err := j.Publish(ctx, subject, []byte(`{}`), js.WithMsgID("x1"), js.WithExpectStream("NOT_"+stream))
		if e := apiError(t, err); e.ErrorCode != 10060 || e.Code != 400 {
			t.Fatalf("expected stream mismatch: %+v", e)
		}
		_, err = tg.legacy(t).Publish(subject, []byte(`{}`), nats.MsgId("x2"), nats.ExpectStream("NOT_"+stream))
		var le *nats.APIError
		if !errors.As(err, &le) || le.ErrorCode != 10060 {
			t.Fatalf("legacy expected stream mismatch: %v", err)
		}
		for _, c := range []struct {
			header string
			opt    js.PublishOpt
		}{
			{"Nats-Expected-Last-Sequence", js.WithExpectLastSequence(99)},
			{"Nats-Expected-Last-Msg-Id", js.WithExpectLastMsgID("nope")},
			{"Nats-Expected-Last-Subject-Sequence", js.WithExpectLastSequencePerSubject(99)},
		} {
			_, err := j.Publish(ctx, subject, []byte(`{}`), js.WithMsgID("x-"+c.header), c.opt)
			e := apiError(t, err)
			if e.Code != 400 || (tg.bridge != nil && !strings.Contains(e.Description, c.header)) {
				t.Fatalf("%s: %+v", c.header, e)
			}
			t.Logf("%s: %d %d %s", c.header, e.Code, e.ErrorCode, e.Description)
		}
		_, err = j.Publish(ctx, subject, []byte(`{}`), js.WithMsgID("x-ttl"), js.WithMsgTTL(time.Minute))
		if e := apiError(t, err); e.Code != 400 || e.ErrorCode != 10166 || (tg.bridge != nil && !strings.Contains(e.Description, "Nats-TTL")) {
			t.Fatalf("Nats-TTL: %+v", e)
		}
		_, err = j.Publish(ctx, subject, []byte(`{}`), js.WithMsgID("x-schedule"), js.WithScheduleEvery(time.Minute), js.WithScheduleTarget(subject+".due"))
		if e := apiError(t, err); e.Code != 400 || (tg.bridge != nil && !strings.Contains(e.Description, "Nats-Schedule")) {
			t.Fatalf("Nats-Schedule: %+v", e)
		}
		// The right stream name is fine, and is the only message written.
		ack, err := j.Publish(ctx, subject, []byte(`{"ok":1}`), js.WithMsgID("ok"), js.WithExpectStream(stream))
		if err != nil || ack.Sequence != 1 {
			t.Fatalf("matching expected stream: %+v %v", ack, err)
		}
		wantStored(t, tg, stream, subject, storedMsg{msgID: "ok", body: []byte(`{"ok":1}`)})
	})
}

// A binary body, plain text and an empty body read back as sent (the
// bridge: base64, marked, and for the empty body JSON null,
// docs/jetstream.md); JSON bodies read back byte for byte, white space and all.
func TestJetStreamBodiesReadBack(t *testing.T) {
	forTargets(t, func(t *testing.T, tg *jsTarget) {
		ctx := jsCtx(t)
		j := tg.js(t)
		stream, subject := tg.fresh(t)
		sent := []storedMsg{
			{msgID: "binary", body: []byte{0x00, 0xff, 0x80, 'a', '\n'}},
			{msgID: "text", body: []byte("plain text, not JSON")},
			{msgID: "json", body: []byte(" {\"a\": [1, 2]}\n")},
			{msgID: "string", body: []byte(`"a JSON string"`)},
			{msgID: "empty", body: nil},
		}
		for i, m := range sent {
			ack, err := j.Publish(ctx, subject, m.body, js.WithMsgID(m.msgID))
			if err != nil || ack.Sequence != uint64(i+1) {
				t.Fatalf("publish %s: %+v %v", m.msgID, ack, err)
			}
		}
		want := append([]storedMsg(nil), sent...)
		if tg.bridge != nil {
			// A reader of the JSON answer gets the JSON value (the white
			// space around it is JSON's, not the value's); the frame
			// holds the body byte for byte.
			want[2].body = bytes.TrimSpace(sent[2].body)
			if got := storedPayload(t, tg.bridge, stream, partitionOf(subject), 3); !bytes.Equal(got, sent[2].body) {
				t.Fatalf("JSON body stored as %q", got)
			}
		}
		want[4].body = []byte{} // docs/jetstream.md: an empty body reads back empty, not null
		wantStored(t, tg, stream, subject, want...)
	})
}

// A plain publish (no reply subject) on a stream subject is stored.
func TestJetStreamPlainPublishIsStored(t *testing.T) {
	forTargets(t, func(t *testing.T, tg *jsTarget) {
		stream, subject := tg.fresh(t)
		msg := nats.NewMsg(subject)
		msg.Header.Set("Nats-Msg-Id", "plain-1")
		msg.Data = []byte(`{"plain":true}`)
		if err := tg.nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the plain publish to be stored", 30*time.Second, func() bool {
			return len(tg.stored(t, stream, subject)) > 0
		})
		wantStored(t, tg, stream, subject, storedMsg{msgID: "plain-1", body: msg.Data})
		if tg.bridge != nil {
			if v := metricValue(t, tg.bridge, "queen_jetstream_unacknowledged_total"); v != 1 {
				t.Fatalf("queen_jetstream_unacknowledged_total %v", v)
			}
		}
	})
}

// 5,000 PublishAsync messages over 20 subjects are all acknowledged; the
// sequences are dense where the target makes them so (the bridge: per
// partition; JetStream: per stream), and each message reads back exactly
// once.
func TestJetStreamPublishAsyncBurst(t *testing.T) {
	const total, subjects = 5000, 20
	forTargets(t, func(t *testing.T, tg *jsTarget) {
		j, err := js.New(tg.nc, js.WithPublishAsyncMaxPending(256))
		if err != nil {
			t.Fatal(err)
		}
		stream, base := tg.fresh(t)
		type sent struct {
			subject, id string
			body        []byte
			ack         js.PubAckFuture
		}
		msgs := make([]sent, total)
		for i := range msgs {
			m := &msgs[i]
			m.subject, m.id = fmt.Sprintf("%s.k%d", base, i%subjects), fmt.Sprintf("m%d", i)
			m.body = []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", 150)))
			if m.ack, err = j.PublishAsync(m.subject, m.body, js.WithMsgID(m.id), js.WithStallWait(30*time.Second)); err != nil {
				t.Fatalf("publish %d: %v", i, err)
			}
		}
		select {
		case <-j.PublishAsyncComplete():
		case <-time.After(2 * time.Minute):
			t.Fatalf("%d acknowledgements outstanding", j.PublishAsyncPending())
		}
		seqs := map[string]map[uint64]bool{} // group -> sequences acknowledged
		for i := range msgs {
			select {
			case ack := <-msgs[i].ack.Ok():
				if ack.Stream != stream || ack.Duplicate {
					t.Fatalf("message %d: %+v", i, ack)
				}
				g := tg.group(msgs[i].subject)
				if seqs[g] == nil {
					seqs[g] = map[uint64]bool{}
				}
				if seqs[g][ack.Sequence] {
					t.Fatalf("message %d: sequence %d of %s acknowledged twice", i, ack.Sequence, g)
				}
				seqs[g][ack.Sequence] = true
			case err := <-msgs[i].ack.Err():
				t.Fatalf("message %d: %v", i, err)
			}
		}
		for g, s := range seqs {
			for seq := uint64(1); seq <= uint64(len(s)); seq++ {
				if !s[seq] {
					t.Fatalf("%s: sequences not dense, %d missing of %d", g, seq, len(s))
				}
			}
		}
		read := map[string][]byte{}
		readGroups := map[string]bool{}
		for i := 0; i < subjects; i++ {
			subject := msgs[i].subject
			if readGroups[tg.group(subject)] {
				continue
			}
			readGroups[tg.group(subject)] = true
			for _, m := range tg.stored(t, stream, subject) {
				if _, twice := read[m.msgID]; twice {
					t.Fatalf("%s read back twice", m.msgID)
				}
				read[m.msgID] = m.body
			}
		}
		for _, m := range msgs {
			if !bytes.Equal(read[m.id], m.body) {
				t.Fatalf("%s read back as %q", m.id, read[m.id])
			}
		}
		if len(read) != total {
			t.Fatalf("%d messages read back, want %d", len(read), total)
		}
		t.Logf("%d acknowledged over %d sequence groups, each read back once", total, len(seqs))
	})
}

// `nats pub --jetstream` (the nats CLI, built at testkit.NATSCLIVersion)
// sees the bridge as a JetStream stream: stored with a sequence, the same
// Nats-Msg-Id a duplicate, an expected stream mismatch an error.
func TestNatsCLIPublishesToJetStream(t *testing.T) {
	cli := testkit.NATSCLI(t)
	forTargets(t, func(t *testing.T, tg *jsTarget) {
		stream, subject := tg.fresh(t)
		run := func(args ...string) (string, error) {
			cmd := exec.Command(cli, append([]string{"--server", tg.url, "--timeout", "30s", "pub", "--jetstream", subject}, args...)...)
			cmd.Env = append(cmd.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		out, err := run(`{"cli":1}`, "-H", "Nats-Msg-Id:cli-1")
		if err != nil || !strings.Contains(out, fmt.Sprintf("Stored in Stream: %s Sequence: 1", stream)) || strings.Contains(out, "Duplicate") {
			t.Fatalf("first publish: %v\n%s", err, out)
		}
		out, err = run(`{"cli":"again"}`, "-H", "Nats-Msg-Id:cli-1")
		if err != nil || !strings.Contains(out, fmt.Sprintf("Stored in Stream: %s Sequence: 1 Duplicate: true", stream)) {
			t.Fatalf("repeat: %v\n%s", err, out)
		}
		out, err = run(`{"cli":2}`, "-H", "Nats-Msg-Id:cli-2", "-H", "Nats-Expected-Stream:NOT_"+stream)
		if err == nil || !strings.Contains(out, "expected stream does not match") {
			t.Fatalf("expected stream mismatch: %v\n%s", err, out)
		}
		wantStored(t, tg, stream, subject, storedMsg{msgID: "cli-1", body: []byte(`{"cli":1}`)})
	})
}
