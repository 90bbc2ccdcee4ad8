package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryFunctionIsInTheSQLDocs: each function file has its row in
// docs/sql.md's table of functions and their callers.
func TestEveryFunctionIsInTheSQLDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("functions/*.sql")
	if err != nil || len(files) < 10 {
		t.Fatalf("function files: %v %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sql")
		if !strings.Contains(string(doc), "| `"+name+"`") && !strings.Contains(string(doc), ", `"+name+"` |") {
			t.Errorf("%s has no row in docs/sql.md's function table", name)
		}
	}
}
