package consume

import "testing"

// The dead letters' routes: the list takes any token, the requeue admin
// tokens only (bridge's TestEveryRoomRouteIsDocumented holds them to the
// docs).
func TestRoutesRights(t *testing.T) {
	admin := map[string]bool{}
	for _, r := range (&Consumer{}).Routes() {
		admin[r.Method+" "+r.Pattern] = r.Admin
	}
	if len(admin) != 2 || admin["GET /api/v1/dlq"] || !admin["POST /api/v1/dlq/requeue"] {
		t.Fatalf("routes and rights: %v", admin)
	}
}
