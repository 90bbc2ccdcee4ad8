package pgwire_test

import (
	"testing"

	"github.com/queenbridge/queenbridge/pgwire"
)

// TestEverySQLFileIsAStatement: each file of sql/ is read by a statement of
// the package, so a file left behind when a statement changed (or one put
// there by hand and never wired in) is found, not shipped unread.
func TestEverySQLFileIsAStatement(t *testing.T) {
	unread, err := pgwire.UnreadSQLFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(unread) != 0 {
		t.Fatalf("sql files no statement reads: %v", unread)
	}
}
