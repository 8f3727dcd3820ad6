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
// silent, and a publisher into a topic nobody subscribes to does not flood the log.
type dropLog struct {
	mu     sync.Mutex
	topics map[string]*topicDrops
	now    func() time.Time // time.Now; tests move it
}

type topicDrops struct {
	logged  time.Time // when the last line was written
	pending int64     // dropped since then
}

// add records n messages dropped from topic's backlog and logs them when the topic's last
// line is a minute old.
func (d *dropLog) add(logger watermill.LoggerAdapter, topic string, n int64) {
	if n <= 0 {
		return
	}
	d.mu.Lock()
	now := d.now()
	if d.topics == nil {
		d.topics = make(map[string]*topicDrops)
	}
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
		d.mu.Unlock()
		return
	}
	dropped, since := t.pending, t.logged
	t.logged, t.pending = now, 0
	d.mu.Unlock()
	fields := watermill.LogFields{"topic": topic, "dropped": dropped}
	if !since.IsZero() {
		fields["since"] = since.Format(time.RFC3339)
	}
	warn(logger, "relq: the topic has no group and its backlog is full: its oldest messages were dropped "+
		"(subscribe a group, raise the backend's BacklogLimit, or set BacklogFull to refuse)", fields)
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

// forgetOldest drops the topic logged longest ago. Called with mu held.
func (d *dropLog) forgetOldest() {
	var oldest string
	var at time.Time
	for name, t := range d.topics {
		if oldest == "" || t.logged.Before(at) {
			oldest, at = name, t.logged
		}
	}
	delete(d.topics, oldest)
}
