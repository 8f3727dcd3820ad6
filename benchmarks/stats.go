package benchmarks

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
)

// Percentiles summarise durations, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	// N is how many samples there were.
	N int `json:"n"`
}

// percentiles sorts d and reads the nearest-rank percentiles.
func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		i := int(p*float64(len(d))+0.5) - 1
		i = min(max(i, 0), len(d)-1)
		return msOf(d[i])
	}
	return Percentiles{P50: at(0.50), P99: at(0.99), Max: at(1), N: len(d)}
}

// messages builds n messages with payloads of size bytes, before any clock starts.
func messages(n, size int) []*message.Message {
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	msgs := make([]*message.Message, n)
	for i := range msgs {
		msgs[i] = message.NewMessage(watermill.NewUUID(), payload)
	}
	return msgs
}

// infoField reads one numeric field of an INFO section.
func infoField(ctx context.Context, c *redis.Client, section, field string) (int64, error) {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO %s has no %s", section, field)
}

// perSecond is n over d.
func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// waitFor polls cond every 10ms until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// msOf is d in milliseconds, with fractions.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
