package bridge_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// documented is every docs/*.md file and the README, as one text.
func documented(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob("../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	var all strings.Builder
	for _, f := range append(files, "../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	return all.String()
}

// TestEveryNATSSubjectIsDocumented: each subject the micro service
// registers, written with the default prefix and <bridge-id> for a bridge's
// own, appears in backticks in the docs.
func TestEveryNATSSubjectIsDocumented(t *testing.T) {
	n := newNode(t, nodeOpts{})
	docs := documented(t)
	subjects := n.br.EndpointSubjects()
	if len(subjects) < 10 {
		t.Fatalf("the service registers %d subjects: %v", len(subjects), subjects)
	}
	for _, s := range subjects {
		s = strings.Replace(s, n.prefix+".", "queen.", 1)
		s = strings.Replace(s, n.br.ID(), "<bridge-id>", 1)
		if !strings.Contains(docs, "`"+s+"`") {
			t.Errorf("NATS subject %s is registered but no doc names it (in backticks)", s)
		}
	}
}

// TestEveryHTTPRouteIsDocumented: each pattern httpHandler registers
// ("METHOD /path", or a path for any method) appears in backticks in the
// docs.
func TestEveryHTTPRouteIsDocumented(t *testing.T) {
	routes := registeredRoutes(t)
	if len(routes) < 12 {
		t.Fatalf("found %d routes in httpfront.go: %v", len(routes), routes)
	}
	docs := documented(t)
	for _, r := range routes {
		if !strings.Contains(docs, "`"+r+"`") {
			t.Errorf("HTTP route %s is registered but no doc names it (in backticks)", r)
		}
	}
}

// TestEveryRoomRouteIsDocumented: each route of the rooms' tables (admin,
// consume, console), which httpHandler registers in one loop, appears in
// backticks in the docs as "METHOD pattern" (or with its query after a
// "?").
func TestEveryRoomRouteIsDocumented(t *testing.T) {
	n := newNode(t, nodeOpts{})
	routes := n.br.RoomRoutes()
	if len(routes) < 20 {
		t.Fatalf("the rooms' tables hold %d routes: %v", len(routes), routes)
	}
	docs := documented(t)
	for r := range routes {
		if !strings.Contains(docs, "`"+r+"`") && !strings.Contains(docs, "`"+r+"?") {
			t.Errorf("HTTP route %s is in a room's table but no doc names it (in backticks)", r)
		}
	}
}

// registeredRoutes reads the patterns out of httpHandler's source: every
// string literal in it that is a ServeMux pattern.
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "httpfront.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`^((GET|POST|PUT|PATCH|DELETE) )?/[A-Za-z0-9/{}._-]*$`)
	var routes []string
	ast.Inspect(f, func(node ast.Node) bool {
		fn, ok := node.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "httpHandler" {
			return true
		}
		ast.Inspect(fn.Body, func(node ast.Node) bool {
			if lit, ok := node.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && pattern.MatchString(s) {
					routes = append(routes, s)
				}
			}
			return true
		})
		return false
	})
	return routes
}
