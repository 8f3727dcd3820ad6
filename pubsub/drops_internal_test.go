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

// Drops that come within the minute after a line are not held back until the next drop: the
// minute's end logs them, and so does Close, whichever comes first.
func TestBacklogDropsWithinTheMinuteAreLoggedWhenItEnds(t *testing.T) {
	t.Parallel()
	logger := watermill.NewCaptureLogger()
	d := newDropLog(logger)
	var fire []func()
	var waits []time.Duration
	d.after = func(wait time.Duration, f func()) *time.Timer {
		waits, fire = append(waits, wait), append(fire, f)
		return time.NewTimer(time.Hour)
	}
	dropped := func() []any {
		var out []any
		for _, m := range logger.Captured()[watermill.ErrorLogLevel] {
			out = append(out, m.Fields["dropped"])
		}
		return out
	}
	d.add("a", 3)
	d.add("a", 4)
	d.add("a", 5)
	require.Equal(t, []any{int64(3)}, dropped())
	require.Len(t, fire, 1, "one timer for the drops waiting")
	require.LessOrEqual(t, waits[0], dropLogEvery)
	fire[0]()
	require.Equal(t, []any{int64(3), int64(9)}, dropped(), "the minute's end logs what waited")
	fire[0]()
	require.Len(t, dropped(), 2, "a timer with nothing waiting logs nothing")

	d.add("a", 2)
	d.close()
	require.Equal(t, []any{int64(3), int64(9), int64(2)}, dropped(), "Close logs what waits")
}

// The Publisher remembers at most dropTopicsMax topics between lines, and logs what a topic it
// forgets still had waiting.
func TestBacklogDropLogForgetsTheOldestTopics(t *testing.T) {
	t.Parallel()
	d := newDropLog(watermill.NopLogger{})
	for i := range dropTopicsMax + 10 {
		d.add(fmt.Sprint("t", i), 1)
	}
	require.Len(t, d.topics, dropTopicsMax)
}
