package memprobe

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/relq/relq/benchmarks"
)

func TestTable(t *testing.T) {
	b, err := os.ReadFile("/tmp/bench.json")
	if err != nil {
		t.Skip()
	}
	var r benchmarks.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	r.WriteTable(os.Stdout)
}
