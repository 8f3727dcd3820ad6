package memprobe

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"
	"strings"
	"testing"
	"time"

	"github.com/relq/relq/benchmarks"
	"github.com/relq/relq/internal/redistest"
)

func TestE2E(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	c := srv.Client(t)
	ctx := context.Background()
	want := os.Getenv("TARGET")
	for _, tg := range benchmarks.Targets() {
		if want != "" && tg.Name != want {
			continue
		}
		cfg := benchmarks.Config{}.WithDefaults()
		c.ConfigResetStat(ctx)
		cpu0 := redisCPU(t, c)
		if os.Getenv("PROF") != "" {
			f, _ := os.Create("/tmp/cpu-" + tg.Name + ".prof")
			pprof.StartCPUProfile(f)
		}
		start := time.Now()
		measure := benchmarks.MeasureEndToEnd
		if os.Getenv("CONC") != "" {
			measure = benchmarks.MeasureEndToEndConcurrent
		}
		rate, err := measure(ctx, c, tg, cfg, 4)
		if os.Getenv("PROF") != "" {
			pprof.StopCPUProfile()
		}
		if err != nil {
			t.Fatal(err)
		}
		wall := time.Since(start)
		cpu := redisCPU(t, c) - cpu0
		fmt.Printf("%-12s %8.0f msg/s  wall %v  redis cpu %.2fs\n", tg.Name, rate, wall.Round(time.Millisecond), cpu)
		info, _ := c.Info(ctx, "commandstats").Result()
		var lines []string
		for _, l := range strings.Split(info, "\n") {
			if strings.HasPrefix(l, "cmdstat_") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Println("   ", l)
		}
	}
}

func redisCPU(t *testing.T, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, l := range strings.Split(info, "\n") {
		l = strings.TrimSpace(l)
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(l, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
		}
	}
	return sum
}
