package admin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every consumer-group route is documented, in backticks, as
// "METHOD pattern"; only the two deletes take admin tokens.
func TestGroupRoutesAreDocumented(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	var docs strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	routes := (&Admin{}).groupRoutes()
	if len(routes) != 8 {
		t.Fatalf("%d consumer-group routes", len(routes))
	}
	admins := 0
	for _, r := range routes {
		if !strings.Contains(docs.String(), "`"+r.Method+" "+r.Pattern+"`") {
			t.Errorf("%s %s is not in docs/*.md", r.Method, r.Pattern)
		}
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

// The console's routes here are documented as the others are, and only
// read.
func TestConsoleRoutesAreDocumented(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	var docs strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	for _, r := range (&Admin{}).consoleRoutes() {
		if !strings.Contains(docs.String(), "`"+r.Method+" "+r.Pattern+"`") {
			t.Errorf("%s %s is not in docs/*.md", r.Method, r.Pattern)
		}
		if r.Admin || r.Method != "GET" {
			t.Errorf("%s %s: a read for any token", r.Method, r.Pattern)
		}
	}
}
