package consume

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The dead letters' routes are documented; the list takes any token, the
// requeue admin tokens only.
func TestRoutesAreDocumented(t *testing.T) {
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
	admin := map[string]bool{}
	for _, r := range (&Consumer{}).Routes() {
		if !strings.Contains(docs.String(), "`"+r.Method+" "+r.Pattern+"`") {
			t.Errorf("%s %s is not in docs/*.md", r.Method, r.Pattern)
		}
		admin[r.Method+" "+r.Pattern] = r.Admin
	}
	if len(admin) != 2 || admin["GET /api/v1/dlq"] || !admin["POST /api/v1/dlq/requeue"] {
		t.Fatalf("routes and rights: %v", admin)
	}
}
