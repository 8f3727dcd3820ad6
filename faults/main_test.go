package faults

import (
	"os"
	"testing"

	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.Main(m, func() { printReport(os.Stdout) })
}
