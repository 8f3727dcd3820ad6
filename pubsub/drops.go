package pubsub

import (
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
)

// dropLogEvery is how often, at most, the Publisher logs a topic's backlog drops.
const dropLogEvery = time.Minute

// dropTopicsMax bounds the topics whose drops the Publisher remembers between two logs: a
// publisher to very many full topics forgets the quietest first, and only logs them again
// sooner than dropLogEvery.
const dropTopicsMax = 1024

// dropLog reports the messages a topic's full backlog dropped (BacklogDropOldest) at warning
// level, once per topic per minute with the count since its last line: a drop is never
// silent, and a publisher into a topic nobody subscribes to does not flood the log. Drops
// that come within the minute are logged when it ends (a timer), or when the Publisher
// closes, whichever comes first.
type dropLog struct {
	mu     sync.Mutex
	topics map[string]*topicDrops
	now    func() time.Time                        // time.Now; tests move it
	after  func(time.Duration, func()) *time.Timer // time.AfterFunc; tests hold it
	logger watermill.LoggerAdapter
}

type topicDrops struct {
	logged  time.Time   // when the last line was written
	pending int64       // dropped since then
	timer   *time.Timer // armed while pending drops wait for the minute to end
}

func newDropLog(logger watermill.LoggerAdapter) *dropLog {
	return &dropLog{topics: map[string]*topicDrops{}, now: time.Now, after: time.AfterFunc, logger: logger}
}

// add records n messages dropped from topic's backlog and logs them when the topic's last
// line is a minute old; otherwise a timer logs them when the minute ends.
func (d *dropLog) add(topic string, n int64) {
	if n <= 0 {
		return
	}
	d.mu.Lock()
	now := d.now()
	t := d.topics[topic]
	if t == nil {
		if len(d.topics) >= dropTopicsMax {
			d.forgetOldest()
		}
		t = &topicDrops{}
		d.topics[topic] = t
	}
	t.pending += n
	if !t.logged.IsZero() && now.Sub(t.logged) < dropLogEvery {
		if t.timer == nil {
			t.timer = d.after(dropLogEvery-now.Sub(t.logged), func() { d.flush(topic) })
		}
		d.mu.Unlock()
		return
	}
	line := d.take(topic, t, now)
	d.mu.Unlock()
	line()
}

// flush logs what topic dropped since its last line, if anything.
func (d *dropLog) flush(topic string) {
	d.mu.Lock()
	t := d.topics[topic]
	if t == nil || t.pending == 0 {
		d.mu.Unlock()
		return
	}
	line := d.take(topic, t, d.now())
	d.mu.Unlock()
	line()
}

// close logs every topic's pending drops and stops the timers: the Publisher is closing.
func (d *dropLog) close() {
	d.mu.Lock()
	var lines []func()
	for name, t := range d.topics {
		if t.pending > 0 {
			lines = append(lines, d.take(name, t, d.now()))
		}
	}
	d.mu.Unlock()
	for _, line := range lines {
		line()
	}
}

// take resets topic's pending drops and returns the line that reports them. Called with mu
// held; the line is written after it is released.
func (d *dropLog) take(topic string, t *topicDrops, now time.Time) func() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	dropped, since := t.pending, t.logged
	t.logged, t.pending = now, 0
	fields := watermill.LogFields{"topic": topic, "dropped": dropped}
	if !since.IsZero() {
		fields["since"] = since.Format(time.RFC3339)
	}
	return func() {
		warn(d.logger, "relq: the topic has no group and its backlog is full: its oldest messages were dropped "+
			"(subscribe a group, raise the backend's BacklogLimit, or set BacklogFull to refuse)", fields)
	}
}

// forgetOldest drops the topic logged longest ago, logging what it still had pending. Called
// with mu held.
func (d *dropLog) forgetOldest() {
	var oldest string
	var at time.Time
	for name, t := range d.topics {
		if oldest == "" || t.logged.Before(at) {
			oldest, at = name, t.logged
		}
	}
	if t := d.topics[oldest]; t.pending > 0 {
		defer d.take(oldest, t, d.now())()
	}
	delete(d.topics, oldest)
}

// Warner is a logger with a warning level, which watermill.LoggerAdapter lacks: the Publisher
// logs backlog drops with Warn when its logger implements it.
type Warner interface {
	Warn(msg string, fields watermill.LogFields)
}

// warn logs at warning level: Warn when the logger has it, else Error (a drop is lost data,
// which a logger set to errors only must still show), with the field level=warning.
func warn(logger watermill.LoggerAdapter, msg string, fields watermill.LogFields) {
	if w, ok := logger.(Warner); ok {
		w.Warn(msg, fields)
		return
	}
	logger.Error(msg, nil, fields.Add(watermill.LogFields{"level": "warning"}))
}
