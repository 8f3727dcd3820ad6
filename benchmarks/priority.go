package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// ErrNoPriorities is returned by MeasurePriorityPickup for targets without
// Capabilities.Priorities.
var ErrNoPriorities = errors.New("benchmarks: no priorities")

const (
	// highPriority is the priority of the message that should overtake the backlog (the
	// backlog's is the default, 0).
	highPriority = 10
	// priorityDelay is the delay of the high-priority message published delayed.
	priorityDelay = 200 * time.Millisecond
	// priorityBatch is how many backlog messages one Publish call stores.
	priorityBatch = 1000
	// priorityWait bounds the wait for a high-priority message: a backend that serves it
	// after the whole backlog takes seconds.
	priorityWait = 2 * time.Minute
)

// PriorityPickup is how soon a high-priority message reaches a handler behind a backlog of
// Config.PriorityBacklog due messages of the default priority, on a backend with
// Capabilities.Priorities. One subscriber with the library's defaults (Concurrency 1,
// Prefetch 10) consumes; its handler acks at once.
type PriorityPickup struct {
	Backlog int `json:"backlog"`
	// DueNow: published due now while the subscriber works through the backlog; from its
	// Publish returning to its handler starting.
	DueNow Pickup `json:"due_now"`
	// Delayed: published with a delay of 200ms right after DueNow's, while the subscriber works
	// through the backlog; from its due time (the Publish call plus the delay: the lateness's
	// upper bound) to its handler starting.
	Delayed Pickup `json:"delayed"`
	// DelayedBacklog: the backlog was published delayed (1ms) too, and all of it became due
	// before the high-priority message (published last, also delayed 1ms) while no consumer
	// ran; then the subscriber starts: from its Subscribe call to the handler starting. On
	// zset this is the worst case: due messages wait in the due-time ZSET until claims move
	// them to the queue, BatchSize per claim, earliest first.
	DelayedBacklog Pickup `json:"delayed_backlog"`
}

// Pickup is how long one high-priority message took to reach a handler, and how many
// backlog messages reached a handler meanwhile.
type Pickup struct {
	MS     float64 `json:"ms"`
	Before int64   `json:"before"`
}

// MeasurePriorityPickup measures PriorityPickup; ErrNoPriorities for a target without
// Capabilities.Priorities.
func MeasurePriorityPickup(ctx context.Context, c *redis.Client, t Target, cfg Config) (PriorityPickup, error) {
	cfg = cfg.WithDefaults()
	if !t.Capabilities().Priorities {
		return PriorityPickup{}, ErrNoPriorities
	}
	res := PriorityPickup{Backlog: cfg.PriorityBacklog}
	var err error
	if res.DueNow, res.Delayed, err = pickupWhileConsuming(ctx, c, t, cfg); err != nil {
		return res, err
	}
	res.DelayedBacklog, err = pickupAfterDelayedBacklog(ctx, c, t, cfg)
	return res, err
}

// pickupWhileConsuming fills the backlog due now, lets one subscriber start on it, then
// publishes a high-priority message due now and one delayed.
func pickupWhileConsuming(ctx context.Context, c *redis.Client, t Target, cfg Config) (dueNow, delayed Pickup, err error) {
	in, err := t.open(c, "priority")
	if err != nil {
		return dueNow, delayed, err
	}
	defer in.close(context.WithoutCancel(ctx))
	if err := in.ensureGroup(ctx); err != nil {
		return dueNow, delayed, err
	}
	pub, err := in.publisher()
	if err != nil {
		return dueNow, delayed, err
	}
	if err := publishBacklog(pub, in.topic, cfg, 0); err != nil {
		return dueNow, delayed, err
	}
	h := newHighWatch(2)
	sub, err := in.subscriber("priority", subscriberOptions{})
	if err != nil {
		return dueNow, delayed, err
	}
	ch, err := sub.Subscribe(ctx, in.topic)
	if err != nil {
		return dueNow, delayed, err
	}
	go h.consume(ch)
	// Into the backlog, as a running consumer would be.
	warm := int64(min(1000, cfg.PriorityBacklog/10))
	for h.low.Load() < warm {
		if err := ctx.Err(); err != nil {
			return dueNow, delayed, err
		}
		time.Sleep(time.Millisecond)
	}

	now, later := highMessage("now", 0), highMessage("delayed", priorityDelay)
	lowAtCall := h.low.Load()
	if err := pub.Publish(in.topic, now); err != nil {
		return dueNow, delayed, err
	}
	returned := time.Now()
	called := time.Now()
	if err := pub.Publish(in.topic, later); err != nil {
		return dueNow, delayed, err
	}
	due := called.Add(priorityDelay)
	var lowAtDue atomic.Int64
	lowAtDue.Store(-1)
	timer := time.AfterFunc(priorityDelay, func() { lowAtDue.Store(h.low.Load()) })
	defer timer.Stop()

	got, err := h.wait(ctx, 2)
	if err != nil {
		return dueNow, delayed, err
	}
	dueNow = Pickup{MS: msOf(got["now"].at.Sub(returned)), Before: got["now"].low - lowAtCall}
	delayed = Pickup{MS: msOf(got["delayed"].at.Sub(due)), Before: max(got["delayed"].low-lowAtDue.Load(), 0)}
	if lowAtDue.Load() < 0 { // delivered before its timer ran: nothing went before it
		delayed.Before = 0
	}
	return dueNow, delayed, nil
}

// pickupAfterDelayedBacklog publishes the backlog and then the high-priority message, each
// delayed 1ms, waits until all are due with nobody consuming, and starts one subscriber.
func pickupAfterDelayedBacklog(ctx context.Context, c *redis.Client, t Target, cfg Config) (Pickup, error) {
	in, err := t.open(c, "priority-delayed")
	if err != nil {
		return Pickup{}, err
	}
	defer in.close(context.WithoutCancel(ctx))
	if err := in.ensureGroup(ctx); err != nil {
		return Pickup{}, err
	}
	pub, err := in.publisher()
	if err != nil {
		return Pickup{}, err
	}
	if err := publishBacklog(pub, in.topic, cfg, time.Millisecond); err != nil {
		return Pickup{}, err
	}
	if err := pub.Publish(in.topic, highMessage("last", time.Millisecond)); err != nil {
		return Pickup{}, err
	}
	for {
		s, err := in.backend.Stats(ctx, &backend.StatsParams{Topic: in.topic, Group: group})
		if err != nil {
			return Pickup{}, err
		}
		if s.Delayed == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	h := newHighWatch(1)
	sub, err := in.subscriber("priority", subscriberOptions{})
	if err != nil {
		return Pickup{}, err
	}
	start := time.Now()
	ch, err := sub.Subscribe(ctx, in.topic)
	if err != nil {
		return Pickup{}, err
	}
	go h.consume(ch)
	got, err := h.wait(ctx, 1)
	if err != nil {
		return Pickup{}, err
	}
	return Pickup{MS: msOf(got["last"].at.Sub(start)), Before: got["last"].low}, nil
}

// publishBacklog publishes cfg.PriorityBacklog messages of the default priority, each delayed
// by delay, priorityBatch per call.
func publishBacklog(pub message.Publisher, topic string, cfg Config, delay time.Duration) error {
	for left := cfg.PriorityBacklog; left > 0; left -= priorityBatch {
		batch := messages(min(left, priorityBatch), cfg.PayloadBytes)
		if delay > 0 {
			for _, m := range batch {
				pubsub.SetDelay(m, delay)
			}
		}
		if err := pub.Publish(topic, batch...); err != nil {
			return err
		}
	}
	return nil
}

// highMessage is a high-priority message named name (metadata "high"), delayed by delay.
func highMessage(name string, delay time.Duration) *message.Message {
	m := message.NewMessage(watermill.NewUUID(), []byte(name))
	m.Metadata.Set("high", name)
	pubsub.SetPriority(m, highPriority)
	if delay > 0 {
		pubsub.SetDelay(m, delay)
	}
	return m
}

// highWatch counts the backlog messages handled and notes when each high-priority one was.
type highWatch struct {
	low  atomic.Int64
	high chan highSeen
}

// highSeen is a high-priority message reaching its handler: when, and how many backlog
// messages had before it.
type highSeen struct {
	name string
	at   time.Time
	low  int64
}

func newHighWatch(n int) *highWatch { return &highWatch{high: make(chan highSeen, n)} }

// consume acks every message of ch, counting the backlog and noting the high ones.
func (h *highWatch) consume(ch <-chan *message.Message) {
	for msg := range ch {
		if name := msg.Metadata.Get("high"); name != "" {
			select {
			case h.high <- highSeen{name: name, at: time.Now(), low: h.low.Load()}:
			default: // a redelivery: the first delivery counts
			}
		} else {
			h.low.Add(1)
		}
		msg.Ack()
	}
}

// wait returns the first n high-priority messages seen, by name.
func (h *highWatch) wait(ctx context.Context, n int) (map[string]highSeen, error) {
	got := map[string]highSeen{}
	timeout := time.After(priorityWait)
	for len(got) < n {
		select {
		case s := <-h.high:
			got[s.name] = s
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout:
			return nil, fmt.Errorf("priority pickup: %d of %d high-priority messages reached a handler in %v", len(got), n, priorityWait)
		}
	}
	return got, nil
}

// writePriority prints the priority pickup of the targets that measured it.
func (r *Report) writePriority(w io.Writer) {
	count := func(n int64) string {
		if n < 1000 {
			return fmt.Sprint(n)
		}
		return number(float64(n))
	}
	for _, t := range r.Targets {
		p := t.Priority
		if p == nil {
			continue
		}
		fmt.Fprintf(w, "priority pickup, %s: one message of priority %d behind %s due ones of priority 0, one subscriber (Concurrency 1, Prefetch 10):\n",
			t.Name, highPriority, count(int64(p.Backlog)))
		fmt.Fprintf(w, "  due now, published while it consumes: %s ms after Publish returned; %s of the backlog went before it\n",
			number(p.DueNow.MS), count(p.DueNow.Before))
		fmt.Fprintf(w, "  delayed %v, published while it consumes: %s ms after its due time; %s of the backlog went before it\n",
			priorityDelay, number(p.Delayed.MS), count(p.Delayed.Before))
		fmt.Fprintf(w, "  due after a delayed backlog, no consumer until all were due: %s ms after Subscribe; %s of the backlog went before it\n",
			number(p.DelayedBacklog.MS), count(p.DelayedBacklog.Before))
	}
}

// runPriority measures the priority pickup of t, if it has priorities, for runOnce.
func runPriority(ctx context.Context, c *redis.Client, t Target, tr *TargetReport, cfg Config, progress func(string, ...any)) error {
	p, err := MeasurePriorityPickup(ctx, c, t, cfg)
	switch {
	case errors.Is(err, ErrNoPriorities):
		return nil
	case err != nil:
		return err
	}
	tr.Priority = &p
	progress("%s: priority pickup behind %d due: due now %.1fms (%d before it), delayed %.1fms after due (%d), after a delayed backlog %.1fms (%d)",
		t.Name, p.Backlog, p.DueNow.MS, p.DueNow.Before, p.Delayed.MS, p.Delayed.Before, p.DelayedBacklog.MS, p.DelayedBacklog.Before)
	return nil
}
