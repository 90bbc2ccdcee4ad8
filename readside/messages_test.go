package readside

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/route"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// fakeMessages is one partition's rows as the message routes read them;
// any call it does not answer panics (the nil embedded interface). A route
// may run on any goroutine, so a mutex guards what it records.
type fakeMessages struct {
	MessageStore
	part   storage.MessagePartition
	listed []storage.ListedMessage // what NewestMessages answers
	err    error

	mu     sync.Mutex
	ranges []storage.OffsetRange // what the list asked for
	need   int64
}

func (f *fakeMessages) MessagePartitions(context.Context, tenancy.TenantID, storage.MessageFilter) ([]storage.MessagePartition, error) {
	if f.err != nil {
		return nil, f.err
	}
	return []storage.MessagePartition{f.part}, nil
}

func (f *fakeMessages) NewestMessages(_ context.Context, ranges []storage.OffsetRange, _, _ time.Time, need int64) ([]storage.ListedMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ranges, f.need = append([]storage.OffsetRange(nil), ranges...), need
	return f.listed, nil
}

// The list form on a fake store: a list by status walks only the offsets
// that status can have (after the queue mode's cursor for pending), a
// tombstone further, and the page is the newest first, cut at limit; a
// store that fails answers 503 with its error.
func TestMessageListOnStore(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	f := &fakeMessages{part: storage.MessagePartition{ID: 7, Queue: "q", Partition: "p", Last: 10, Tombstones: 1,
		Groups: []storage.GroupState{{Group: storage.QueueMode, Cursor: 4, DeliveredTo: 4}}}}
	for off := int64(8); off <= 10; off++ {
		f.listed = append(f.listed, storage.ListedMessage{PartitionID: 7, Message: storage.Message{Offset: off,
			Frame: segment.Frame{TransactionID: fmt.Sprint("t", off)}, CreatedAt: now.Add(time.Duration(off-10) * time.Second)}})
	}
	m, err := NewMessages(MessagesConfig{DB: f, Payloads: plainPayloads{}})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery("status=pending&limit=2")
	status, body := m.ServeMessageList(context.Background(), tenancy.TenantID{}, q)
	if status != jsonapi.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var got struct {
		Messages []struct{ TransactionID, Status string }
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := []struct{ TransactionID, Status string }{{"t10", MessagePending}, {"t9", MessagePending}}
	if !reflect.DeepEqual(got.Messages, want) {
		t.Errorf("listed %+v, want %+v", got.Messages, want)
	}
	f.mu.Lock()
	ranges, need := f.ranges, f.need
	f.mu.Unlock()
	if wantRanges := []storage.OffsetRange{{PartitionID: 7, Lo: 4, Hi: 10, Need: 3}}; !reflect.DeepEqual(ranges, wantRanges) || need != 3 {
		t.Errorf("walked %+v (need %d), want %+v (need 3): pending is after the cursor, one more for the tombstone", ranges, need, wantRanges)
	}

	down := &fakeMessages{err: errors.New("pool closed")}
	m, err = NewMessages(MessagesConfig{DB: down, Payloads: plainPayloads{}})
	if err != nil {
		t.Fatal(err)
	}
	if status, body := m.ServeMessageList(context.Background(), tenancy.TenantID{}, q); status != jsonapi.StatusServiceUnavailable || !json.Valid(body) {
		t.Errorf("a failing store answered %d %s, want 503 with its error", status, body)
	}
	if _, err := NewMessages(MessagesConfig{DB: f}); err == nil {
		t.Error("NewMessages took a config without Payloads")
	}
}

// deleteFake answers DeleteMessage: deleted for the transaction "t1"
// only.
type deleteFake struct{ fakeMessages }

func (f *deleteFake) DeleteMessage(_ context.Context, _ tenancy.TenantID, _ int64, txid string) (bool, error) {
	return txid == "t1", nil
}

// toldDeletes records what Tombstones hears; mu guards told (the route
// may run on any goroutine).
type toldDeletes struct {
	mu      sync.Mutex
	told    []string
	tenants []tenancy.TenantID
}

func (d *toldDeletes) Deleted(tenant tenancy.TenantID, pid int64, txid string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.told = append(d.told, fmt.Sprint(pid, "/", txid))
	d.tenants = append(d.tenants, tenant)
}

// A tombstone that deleted something is told to Tombstones, after it
// committed; one that found nothing is not.
func TestMessageDeleteTellsWhatItDeleted(t *testing.T) {
	t.Parallel()
	told := &toldDeletes{}
	m, err := NewMessages(MessagesConfig{DB: &deleteFake{}, Payloads: plainPayloads{}, Tombstones: told})
	if err != nil {
		t.Fatal(err)
	}
	for _, txid := range []string{"t1", "t2"} {
		path := map[string]string{"partitionId": "7", "transactionId": txid}
		if status, body := m.serveDeleteMessage(context.Background(), tenancy.TenantID{}, route.Request{Path: func(n string) string { return path[n] }}); status != jsonapi.StatusOK {
			t.Fatalf("delete %s: %d %s", txid, status, body)
		}
	}
	told.mu.Lock()
	defer told.mu.Unlock()
	if fmt.Sprint(told.told) != "[7/t1]" {
		t.Fatalf("told %v, want [7/t1]", told.told)
	}
}
