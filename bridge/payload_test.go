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

func TestEncryptedQueueNeverStoresPlaintext(t *testing.T) {
	n := newNode(t, nodeOpts{key: testKey})
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
	block, _ := aes.NewCipher(testKey)
	aead, _ := cipher.NewGCM(block)
	opened, err := aead.Open(nil, f.Payload[:12], f.Payload[12:], nil)
	if err != nil || string(opened) != plain {
		t.Fatalf("decrypted %q (%v), want %q", opened, err, plain)
	}
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
	a := newNode(t, nodeOpts{key: testKey})
	b := newNode(t, nodeOpts{key: testKey, dsn: a.db.Pool().Config().ConnConfig.ConnString(), prefix: a.prefix})
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
