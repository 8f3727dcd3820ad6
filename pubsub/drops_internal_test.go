package pubsub

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"
)

// Backlog drops reach the log at warning level once per topic per minute, with the count since
// the topic's last line: never silent, never a line per publish.
func TestBacklogDropsAreLoggedOncePerTopicPerMinute(t *testing.T) {
	t.Parallel()
	b := newMemPublish()
	b.dropped = 5
	logger := watermill.NewCaptureLogger()
	pub, err := NewPublisher(b, PublisherConfig{}, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	pub.drops.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	lines := func() []watermill.LogFields {
		var out []watermill.LogFields
		for _, m := range logger.Captured()[watermill.ErrorLogLevel] {
			if m.Fields["level"] == "warning" {
				out = append(out, m.Fields)
			}
		}
		return out
	}
	send := func(topic string) {
		require.NoError(t, pub.Publish(topic, message.NewMessage(watermill.NewUUID(), []byte("x"))))
	}

	send("a")
	require.Len(t, lines(), 1, "the first drop is logged at once")
	require.Equal(t, int64(5), lines()[0]["dropped"])
	send("a")
	send("a")
	send("b")
	require.Len(t, lines(), 2, "within the minute only another topic's first drop is logged")
	advance(time.Minute)
	send("a")
	require.Len(t, lines(), 3)
	require.Equal(t, "a", lines()[2]["topic"])
	require.Equal(t, int64(15), lines()[2]["dropped"], "the line counts every drop since the topic's last one")
}

// The Publisher remembers at most dropTopicsMax topics between lines.
func TestBacklogDropLogForgetsTheOldestTopics(t *testing.T) {
	t.Parallel()
	d := dropLog{now: time.Now}
	for i := range dropTopicsMax + 10 {
		d.add(watermill.NopLogger{}, fmt.Sprint("t", i), 1)
	}
	require.Len(t, d.topics, dropTopicsMax)
}
