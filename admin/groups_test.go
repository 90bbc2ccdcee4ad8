package admin

import "testing"

// Every consumer-group route takes any token that may read but the two
// deletes, which take admin tokens (bridge's TestEveryRoomRouteIsDocumented
// holds every route of the table to the docs).
func TestGroupRoutesRights(t *testing.T) {
	routes := (&Admin{}).groupRoutes()
	if len(routes) != 8 {
		t.Fatalf("%d consumer-group routes", len(routes))
	}
	admins := 0
	for _, r := range routes {
		if r.Admin {
			admins++
			if r.Method != "DELETE" {
				t.Errorf("%s %s takes admin tokens", r.Method, r.Pattern)
			}
		}
	}
	if admins != 2 {
		t.Errorf("%d admin routes, want the two deletes", admins)
	}
}

// The console's routes here only read, for any token.
func TestConsoleRoutesOnlyRead(t *testing.T) {
	for _, r := range (&Admin{}).consoleRoutes() {
		if r.Admin || r.Method != "GET" {
			t.Errorf("%s %s: a read for any token", r.Method, r.Pattern)
		}
	}
}
