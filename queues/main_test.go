package queues

import (
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
)

// The sealer's tests need nothing; the settings' start the binary's
// PostgreSQL when they first ask.
func TestMain(m *testing.M) { testenv.Main(m) }
