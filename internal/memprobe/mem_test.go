package memprobe

import (
	"context"
	"fmt"
	"testing"

	"github.com/relq/relq/benchmarks"
	"github.com/relq/relq/internal/redistest"
)

func TestMem(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := srv.Client(t)
	for _, tg := range benchmarks.Targets() {
		cfg := benchmarks.Config{}.WithDefaults()
		b, err := benchmarks.MeasureMemory(context.Background(), c, tg, cfg)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%-12s %.0f B/msg\n", tg.Name, b)
	}
}
