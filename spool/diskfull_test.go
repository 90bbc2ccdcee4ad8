package spool

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// A spool on a disk that fills up: the append that does not fit fails with
// ENOSPC (the caller answers failed), every record acknowledged before it
// survives a reopen, and once a drain frees space appends work again. The
// disk is a 64 KiB tmpfs (the tests run as root, as CI does).
func TestDiskFullFailsAppendsAndKeepsWhatWasAcknowledged(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a 64 KiB tmpfs for the disk-full case: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })

	s := open(t, dir, nil)
	big := func(i int) Record {
		r := rec(fmt.Sprint(i))
		r.Payload = make([]byte, 3000)
		return r
	}
	acked := 0
	var err error
	for i := 0; i < 100; i++ {
		if err = s.Append(context.Background(), []Record{big(i)}); err != nil {
			break
		}
		acked++
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("after %d appends: want ENOSPC, got %v", acked, err)
	}
	if acked < 5 {
		t.Fatalf("only %d appends fit in 64 KiB", acked)
	}
	if err := s.Append(context.Background(), []Record{big(-1)}); err == nil {
		t.Fatal("an append on a full disk succeeded")
	}
	s.Close()

	s2 := open(t, dir, nil)
	if st, err := s2.Check(); err != nil || st.Records != int64(acked) {
		t.Fatalf("after reopen: %+v %v; want %d whole records", st, err, acked)
	}
	got := drainAll(t, s2)
	if len(got) != acked {
		t.Fatalf("drained %d, acknowledged %d", len(got), acked)
	}
	for i, r := range got {
		if r.TransactionID != fmt.Sprint(i) {
			t.Fatalf("record %d is %s", i, r.TransactionID)
		}
	}
	if err := s2.Append(context.Background(), []Record{big(1000)}); err != nil {
		t.Fatalf("append after the drain freed space: %v", err)
	}
}
