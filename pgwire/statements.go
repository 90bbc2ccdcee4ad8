package pgwire

import (
	"embed"
	"strings"
)

// sqlFiles hold the statements of more than a few lines, one per file,
// named for what the statement does: read as SQL, with the Go that sends
// them and decodes their rows beside them in the file that uses them.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// statementsRead are the files statement read. Written only while the
// package's variables are initialised (one goroutine, before any other
// code of the package runs), read only after: no lock.
var statementsRead = map[string]bool{}

// statement is the text of sql/<name>.sql, without its surrounding white
// space. It is read once, when the package's variables are initialised:
// the text is then the same string on every call, so pgx prepares it once
// per connection, as it did a constant. A missing file is a build mistake,
// found by every test of the package.
func statement(name string) string {
	statementsRead[name] = true
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("pgwire: statement " + name + ": " + err.Error())
	}
	return strings.TrimSpace(string(b))
}
