package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

func TestTokensGiveTheirRoleAndTenant(t *testing.T) {
	a, b := [16]byte{1}, [16]byte{2}
	tok, err := NewTokens(map[string]tenancy.TenantID{"ta": a, "tb": b}, map[string]tenancy.TenantID{"adm": a})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		token  string
		ok     bool
		tenant [16]byte
		role   Role
	}{
		{"ta", true, a, RoleTenant}, {"tb", true, b, RoleTenant}, {"adm", true, a, RoleAdmin},
		{"", false, [16]byte{}, 0}, {"t", false, [16]byte{}, 0}, {"ta ", false, [16]byte{}, 0}, {"TA", false, [16]byte{}, 0},
	}
	for _, c := range cases {
		p, ok := tok.Lookup(c.token)
		if ok != c.ok || p.Tenant != c.tenant || p.Role != c.role {
			t.Errorf("Lookup(%q) = %+v, %v; want tenant %v role %v, %v", c.token, p, ok, c.tenant[0], c.role, c.ok)
		}
	}
	if !tok.Enabled() {
		t.Fatal("tokens configured but not enabled")
	}
	if none, _ := NewTokens(nil, nil); none.Enabled() {
		t.Fatal("no tokens, yet enabled")
	}
}

func TestRolesMayWhatTheyShould(t *testing.T) {
	tenant, admin := Principal{Role: RoleTenant}, Principal{Role: RoleAdmin}
	for _, a := range []Action{ActionPush, ActionRead, ActionConfigure, ActionMetrics} {
		if !tenant.May(a) || !admin.May(a) {
			t.Errorf("action %d refused to a tenant or admin token", a)
		}
	}
	if tenant.May(ActionAdmin) || !admin.May(ActionAdmin) {
		t.Error("only admin tokens may use the admin routes")
	}
	if (Principal{}).May(ActionPush) {
		t.Error("the zero principal may push")
	}
}

func TestATokenConfiguredTwiceIsRefusedWithoutNamingIt(t *testing.T) {
	_, err := NewTokens(map[string]tenancy.TenantID{"s3cret": {1}}, map[string]tenancy.TenantID{"s3cret": {1}})
	if !errors.Is(err, ErrTokenTwice) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %v", err)
	}
	if _, err := NewTokens(map[string]tenancy.TenantID{"": {1}}, nil); err == nil {
		t.Fatal("an empty token was accepted")
	}
}

func TestURLRedactsSecrets(t *testing.T) {
	cases := []struct{ in, want string }{
		{"nats://alice:pw1@host:4222", "nats://alice:xxxxx@host:4222"},
		{"nats://tok3n@host:4222", "nats://xxxxx@host:4222"},
		{"nats://a:pw1@h1:4222,nats://b:pw2@h2:4222", "nats://a:xxxxx@h1:4222,nats://b:xxxxx@h2:4222"},
		{"postgres://queen:pw4@db:5432/queen?sslmode=disable", "postgres://queen:xxxxx@db:5432/queen?sslmode=disable"},
		{"postgres://queen@db/queen?password=pw5", "postgres://queen@db/queen?password=xxxxx"},
		{"host=db user=queen password=pw6 dbname=queen", "host=db user=queen password=xxxxx dbname=queen"},
		{"host=db password='p w7' dbname=queen", "host=db password=xxxxx dbname=queen"},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"postgres://queen@db/queen", "postgres://queen@db/queen"},
	}
	for _, c := range cases {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestAccountsMapTheRequestInfoToATenant(t *testing.T) {
	a := NewAccounts(map[string]tenancy.TenantID{"TENANT_A": {1}, "ACXYZ": {2}})
	if !a.Enabled() || NewAccounts(nil).Enabled() {
		t.Fatal("Enabled wrong")
	}
	if ten, err := a.TenantOf(`{"acc":"TENANT_A","rtt":1234}`); err != nil || ten != [16]byte{1} {
		t.Fatalf("TENANT_A: %v %v", ten, err)
	}
	if ten, err := a.TenantOf(`{"acc":"ACXYZ","user":"u"}`); err != nil || ten != [16]byte{2} {
		t.Fatalf("ACXYZ: %v %v", ten, err)
	}
	for _, bad := range []string{"", "{", `{"acc":""}`, `{"user":"x"}`} {
		if _, err := a.TenantOf(bad); !errors.Is(err, ErrNoAccount) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := a.TenantOf(`{"acc":"OTHER"}`); !errors.Is(err, ErrUnknownAccount) {
		t.Fatalf("unmapped: %v", err)
	}
}
