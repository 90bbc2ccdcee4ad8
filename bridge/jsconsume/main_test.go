package jsconsume_test

import (
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
