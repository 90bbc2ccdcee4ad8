package bridge_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/segment"
)

// storedFrame decodes the frame stored at (queue, partition, offset).
func storedFrame(t testing.TB, n *node, queue, partition string, off int64) segment.Frame {
	t.Helper()
	pid := n.count(`SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 AND p.name = $2`, queue, partition)
	s, err := n.db.SegmentAt(context.Background(), pid, off)
	if err != nil {
		t.Fatal(err)
	}
	f, err := segment.Unpack(s.Blob, int(off-s.BaseOffset))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func storedPayload(t testing.TB, n *node, queue, partition string, off int64) []byte {
	return storedFrame(t, n, queue, partition, off).Payload
}

func TestPayloadStoredByteForByte(t *testing.T) {
	n := newNode(t, nodeOpts{})
	payloads := []string{
		`{  "a" :1 ,"b":[ 1,2 ,3 ]   ,"c":{ }}`,
		`"caf\u00e9 \ud83d\ude00 \/ \" \\"`,
		`{"big": 12345678901234567890, "neg": -98765432109876543210.5e-3}`,
		`"` + strings.Repeat("é", 1<<19) + `"`, // 1 MiB of UTF-8
		`[]`, `null`, `true`, `0`,
	}
	var parts []string
	for _, p := range payloads {
		parts = append(parts, `{"queue":"raw","payload":`+p+`}`)
	}
	rs := n.pushHTTP(items(parts...))
	for i, p := range payloads {
		got := storedPayload(t, n, "raw", "Default", rs[i].Offset)
		if !bytes.Equal(got, []byte(p)) {
			t.Fatalf("payload %d stored as %.80q, sent %.80q", i, got, p)
		}
	}
}

var testKey = bytes.Repeat([]byte{0x42}, 32)

// testKeys holds testKey as key id 0, as QUEEN_ENCRYPTION_KEY=<hex> does.
var testKeys = map[uint8][]byte{0: testKey}

func TestEncryptedQueueNeverStoresPlaintext(t *testing.T) {
	n := newNode(t, nodeOpts{keys: testKeys})
	if status, out := n.post("/api/v1/configure", []byte(`{"queue":"secret","options":{"encryptionEnabled":true}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	plain := `{"card":"4111-1111-1111-1111-PLAINTEXT-MARKER"}`
	rs := n.pushHTTP(items(`{"queue":"secret","payload":` + plain + `}`))
	f := storedFrame(t, n, "secret", "Default", rs[0].Offset)
	if f.Flags&segment.FlagEncrypted == 0 {
		t.Fatal("frame not flagged encrypted")
	}
	var raw []byte
	if err := n.db.Pool().QueryRow(context.Background(), `SELECT payload FROM queen.log_segments`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	frames, _ := segment.UnpackAll(raw)
	if bytes.Contains(raw, []byte("PLAINTEXT-MARKER")) || bytes.Contains(frames[0].Payload, []byte("PLAINTEXT-MARKER")) {
		t.Fatal("plaintext found in the stored segment")
	}
	// The stored format: key id || nonce || ciphertext || tag, bound to the
	// tenant, queue and partition (testKey is key id 0).
	if f.Flags&segment.FlagKeyed == 0 || f.Payload[0] != 0 {
		t.Fatalf("flags %b, key id %d: want a keyed payload under key 0", f.Flags, f.Payload[0])
	}
	block, _ := aes.NewCipher(testKey)
	aead, _ := cipher.NewGCM(block)
	ad := append([]byte("queen-payload-v1"), 0)
	ad = append(ad, make([]byte, 16)...) // the default tenant
	ad = append(append(ad, byte(len("secret"))), "secret"...)
	ad = append(append(ad, byte(len("Default"))), "Default"...)
	opened, err := aead.Open(nil, f.Payload[1:13], f.Payload[13:], ad)
	if err != nil || string(opened) != plain {
		t.Fatalf("decrypted %q (%v), want %q", opened, err, plain)
	}
}

// A ciphertext moved to another queue (by anyone who can write SQL) no
// longer decrypts; in its own queue it does.
func TestCiphertextMovedToAnotherQueueFails(t *testing.T) {
	n := newNode(t, nodeOpts{keys: testKeys})
	for _, q := range []string{"vault", "other"} {
		if status, out := n.post("/api/v1/configure", []byte(`{"queue":"`+q+`","options":{"encryptionEnabled":true}}`)); status != http.StatusOK {
			t.Fatalf("configure: %d %s", status, out)
		}
		n.pushHTTP(items(`{"queue":"` + q + `","partition":"p","payload":{"q":"` + q + `"}}`))
	}
	if a := n.read("queue=vault&partition=p"); len(a.Messages) != 1 || string(a.Messages[0].Payload) != `{"q":"vault"}` {
		t.Fatalf("vault reads %+v", a)
	}
	if _, err := n.db.Pool().Exec(context.Background(), `UPDATE queen.log_segments d SET payload = s.payload
		FROM queen.log_segments s, queen.log_partitions ps, queen.queues qs, queen.log_partitions pd, queen.queues qd
		WHERE ps.id = s.partition_id AND qs.id = ps.queue_id AND qs.name = 'vault'
		  AND pd.id = d.partition_id AND qd.id = pd.queue_id AND qd.name = 'other'`); err != nil {
		t.Fatal(err)
	}
	status, out := n.get("/api/v1/messages?queue=other&partition=p")
	if status != http.StatusInternalServerError || !strings.Contains(string(out), "message at offset 1") || strings.Contains(string(out), "vault") {
		t.Fatalf("the moved ciphertext read as %d %s", status, out)
	}
}

// Keys rotate: a log written under key 1 still reads once key 2 is added
// and encrypts, and so does one written before key ids existed.
func TestKeyRotationKeepsOldPayloadsReadable(t *testing.T) {
	key1, key2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	first := newNode(t, nodeOpts{keys: map[uint8][]byte{1: key1}})
	if status, out := first.post("/api/v1/configure", []byte(`{"queue":"rot","options":{"encryptionEnabled":true}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	first.pushHTTP(items(`{"queue":"rot","payload":"one"}`))
	// A payload as bridges before key ids stored it: nonce || ciphertext, no
	// associated data, flagged encrypted only.
	block, _ := aes.NewCipher(key1)
	aead, _ := cipher.NewGCM(block)
	nonce := bytes.Repeat([]byte{9}, 12)
	legacy := aead.Seal(append([]byte{}, nonce...), nonce, []byte(`"zero"`), nil)
	if _, err := first.db.PushBundle(context.Background(), []segment.Write{legacyWrite("rot", "old", legacy)}); err != nil {
		t.Fatal(err)
	}
	dsn := first.db.Pool().Config().ConnConfig.ConnString()
	first.stop()

	second := newNode(t, nodeOpts{keys: map[uint8][]byte{1: key1, 2: key2}, dsn: dsn})
	second.pushHTTP(items(`{"queue":"rot","payload":"two"}`))
	a := second.read("queue=rot")
	if len(a.Messages) != 2 || string(a.Messages[0].Payload) != `"one"` || string(a.Messages[1].Payload) != `"two"` {
		t.Fatalf("after rotation: %+v", a)
	}
	if f := storedFrame(t, second, "rot", "Default", 2); f.Payload[0] != 2 {
		t.Fatalf("the new payload is sealed under key %d, want 2", f.Payload[0])
	}
	if o := second.read("queue=rot&partition=old"); len(o.Messages) != 1 || string(o.Messages[0].Payload) != `"zero"` {
		t.Fatalf("the payload from before key ids: %+v", o)
	}
	// Without key 1, what it sealed no longer opens, and says why.
	third := newNode(t, nodeOpts{keys: map[uint8][]byte{2: key2}, dsn: dsn})
	if status, out := third.get("/api/v1/messages?queue=rot"); status != http.StatusInternalServerError || !strings.Contains(string(out), "key id that is not configured (1)") {
		t.Fatalf("without key 1: %d %s", status, out)
	}
}

// legacyWrite is one segment of one encrypted frame as stored before key ids.
func legacyWrite(queue, partition string, sealed []byte) segment.Write {
	f := []segment.Frame{{ID: uuid.Must(uuid.NewV7()), TransactionID: "legacy-" + partition, Flags: segment.FlagEncrypted, Payload: sealed}}
	return segment.Write{Queue: queue, Partition: partition, Count: 1, Hashes: segment.AppendHashes(nil, f), Blob: segment.Pack(nil, f)}
}

func TestEncryptedQueueWithoutKeyFailsTheItem(t *testing.T) {
	n := newNode(t, nodeOpts{})
	if _, err := n.db.ConfigureQueue(context.Background(), [16]byte{}, "secret", pgwireEncrypt()); err != nil {
		t.Fatal(err)
	}
	status, out := n.post("/api/v1/push", []byte(items(`{"queue":"secret","payload":"x"}`, `{"queue":"open","payload":"y"}`)))
	rs := decodeResults(t, out)
	if status != http.StatusInternalServerError || rs[0].Status != "failed" || !strings.Contains(rs[0].Error, "QUEEN_ENCRYPTION_KEY") || rs[1].Status != "queued" {
		t.Fatalf("%d %s", status, out)
	}
	if c := n.count(`SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'secret'`); c != 0 {
		t.Fatal("an item of an encrypted queue was stored without a key")
	}
}

// A queue switched to encryption through one bridge is encrypted by its peer
// from then on, without waiting for the peer's cached settings to expire.
func TestEncryptionSwitchReachesPeers(t *testing.T) {
	a := newNode(t, nodeOpts{keys: testKeys})
	b := newNode(t, nodeOpts{keys: testKeys, dsn: a.db.Pool().Config().ConnConfig.ConnString(), prefix: a.prefix})
	b.pushHTTP(items(`{"queue":"turned","payload":"before"}`)) // b caches: plaintext
	if status, out := a.post("/api/v1/configure", []byte(`{"queue":"turned","options":{"encryptionEnabled":true}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	waitUntil(t, "the peer to take the new settings", 10*time.Second, func() bool {
		return metricValue(t, b, "queen_queue_settings_received_total") >= 1
	})
	rs := b.pushHTTP(items(`{"queue":"turned","payload":"after"}`))
	if f := storedFrame(t, b, "turned", "Default", rs[0].Offset); f.Flags&segment.FlagEncrypted == 0 || bytes.Contains(f.Payload, []byte("after")) {
		t.Fatalf("the peer stored %q unencrypted after the switch", f.Payload)
	}
}
