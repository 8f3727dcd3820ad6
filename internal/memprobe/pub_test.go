package memprobe

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/relq/relq/benchmarks"
	"github.com/relq/relq/internal/redistest"
)

func TestPub(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := srv.Client(t)
	ctx := context.Background()
	for _, tg := range benchmarks.Targets() {
		if w := os.Getenv("TARGET"); w != "" && tg.Name != w {
			continue
		}
		cfg := benchmarks.Config{BatchMessages: 200_000}.WithDefaults()
		c.ConfigResetStat(ctx)
		cpu0 := redisCPU(t, c)
		if os.Getenv("PROF") != "" {
			f, _ := os.Create("/tmp/pub-" + tg.Name + ".prof")
			pprof.StartCPUProfile(f)
		}
		batch := 100
		if os.Getenv("ONE") != "" {
			batch = 1
		}
		rate, err := benchmarks.MeasurePublish(ctx, c, tg, cfg, batch)
		if os.Getenv("PROF") != "" {
			pprof.StopCPUProfile()
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%-12s %8.0f msg/s redis cpu %.2fs\n", tg.Name, rate, redisCPU(t, c)-cpu0)
		info, _ := c.Info(ctx, "commandstats").Result()
		for _, l := range strings.Split(info, "\n") {
			if strings.HasPrefix(l, "cmdstat_") {
				fmt.Println("   ", strings.TrimSpace(l))
			}
		}
	}
}
