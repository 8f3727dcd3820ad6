package soak

import (
	"os"
	"testing"

	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.Main(m, func() {
		printTable(os.Stdout)
		printChurn(os.Stdout)
	})
}
