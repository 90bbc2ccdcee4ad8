package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/testenv"
)

// The binary runs its embedded NATS from the example accounts
// configuration, connects as the bridge user, and files each tenant
// account's pushes under that account's tenant; no password shows in its
// log.
func TestBinaryInAccountsMode(t *testing.T) {
	const bridgePW, tenantPW = "bridge-pw-3390", "tenant-pw-8812"
	t.Setenv("QUEEN_NATS_BRIDGE_PASSWORD", bridgePW)
	t.Setenv("QUEEN_NATS_TENANT_A_PASSWORD", tenantPW)
	t.Setenv("QUEEN_NATS_TENANT_B_PASSWORD", tenantPW+"b")
	tenant := uuid.New()
	dsn := testenv.NewDatabase(t)
	r := startBinary(t, binary(t),
		"QUEEN_NATS_CONFIG=../../deploy/nats/accounts.conf", "QUEEN_NATS_USER=bridge", "QUEEN_NATS_PASSWORD="+bridgePW,
		"QUEEN_NATS_ACCOUNTS=TENANT_A="+tenant.String(), "QUEEN_PG_DSN="+dsn, "QUEEN_DATA_DIR="+t.TempDir())
	nc, err := nats.Connect("nats://"+r.nats, nats.UserInfo("tenant-a", tenantPW))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg, err := nc.Request("queen.v1.push", []byte(`{"items":[{"queue":"acc","payload":1}]}`), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rs []struct{ Status string }
	if json.Unmarshal(msg.Data, &rs) != nil || len(rs) != 1 || rs[0].Status != "queued" {
		t.Fatalf("tenant push: %s %v", msg.Data, msg.Header)
	}
	if _, err := nats.Connect("nats://"+r.nats, nats.UserInfo("tenant-a", "wrong")); err == nil {
		t.Fatal("connected with a wrong password")
	}
	r.interrupt(t)
	n := countRows(t, dsn, `SELECT count(*) FROM queen.queues WHERE tenant = $1 AND name = 'acc'`, tenant)
	if n != 1 {
		t.Fatalf("the push is not under the account's tenant (%d queues)", n)
	}
	for _, secret := range []string{bridgePW, tenantPW} {
		if strings.Contains(r.Logs(), secret) {
			t.Fatalf("the log shows a password:\n%s", r.Logs())
		}
	}
}

func countRows(t *testing.T, dsn, sql string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
