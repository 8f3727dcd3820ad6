package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

// ErrNoScale is returned by MeasureScale for the baseline, which has no relq backend to
// drive.
var ErrNoScale = errors.New("benchmarks: the scale phase drives a relq backend")

// ScaleReport is the scale phase of one relq backend: the slowest single Redis call of each
// hot or periodic path, run against a group holding many messages in every state.
type ScaleReport struct {
	// InFlight, Delayed, DeadLetters and Topics are what was built before the paths ran.
	InFlight    int `json:"in_flight"`
	Delayed     int `json:"delayed"`
	DeadLetters int `json:"dead_letters"`
	Topics      int `json:"topics"`
	// TopicsFound is what the backend's TopicNames listed in the last round.
	TopicsFound int `json:"topics_found"`
	// FillSeconds is how long building took.
	FillSeconds float64 `json:"fill_seconds"`
	// Ops are the paths, in the order they ran in each round.
	Ops []ScaleOp `json:"ops"`
	// Slowest is the slowest call of all Ops.
	Slowest SlowCall `json:"slowest"`
	// Note says why there are no figures, when there are none (a server refusing CONFIG).
	Note string `json:"note,omitempty"`
}

// ScaleOp is one path, called once per round.
type ScaleOp struct {
	Name string `json:"name"`
	// Calls counts the backend calls made; RedisCalls the Redis commands they sent.
	Calls      int `json:"calls"`
	RedisCalls int `json:"redis_calls"`
	// GoMaxMS is the slowest backend call as the caller saw it, round trips included.
	GoMaxMS float64 `json:"go_max_ms"`
	// Slowest is the slowest Redis command the path sent, by SLOWLOG.
	Slowest SlowCall `json:"slowest"`
}

// SlowCall is one SLOWLOG entry.
type SlowCall struct {
	// Op is the path that sent it (only in ScaleReport.Slowest).
	Op string `json:"op,omitempty"`
	// Micros is the time Redis spent running it.
	Micros int64 `json:"us"`
	// Command is its first four arguments (for a script: EVALSHA, the SHA1, the number of
	// keys, the first key), each cut to 64 bytes.
	Command []string `json:"command"`
}

// scaleBatch is the messages of one Publish, Claim, Nack or EnsureGroup wave while filling.
const scaleBatch = 1000

// Leases and delays of the scale phase: long enough that nothing expires or becomes due
// while it runs, except what the reclaim step makes expire on purpose.
const (
	scaleLease = time.Hour
	scaleDelay = 2 * time.Hour
)

// MeasureScale builds, under one relq backend, a group with ScaleInFlight messages claimed
// and held (long lease), ScaleDelayed messages delayed for hours, ScaleDeadLetters dead
// letters and ScaleTopics topics with a group; then calls each hot or periodic path (publish,
// claim, extend, ack, nack, dead-letter nack, reclaim, stats, dead-letter pages, requeue,
// bounded purge, TopicNames) once per round, ScaleRounds rounds after one unrecorded warm-up
// round (which loads the scripts), with SLOWLOG recording every command (CONFIG SET
// slowlog-log-slower-than 0, restored after). It reports, per path, the slowest command its
// calls sent: a script is one command, however much it does. SLOWLOG entries are told apart
// by the backend client's name, so other clients do not count, but CONFIG SET and SLOWLOG
// RESET are server-wide: run it on a server nobody else uses.
func MeasureScale(ctx context.Context, c *redis.Client, t Target, cfg Config) (ScaleReport, error) {
	cfg = cfg.WithDefaults()
	if t.Baseline() {
		return ScaleReport{}, ErrNoScale
	}
	rep := ScaleReport{InFlight: cfg.ScaleInFlight, Delayed: cfg.ScaleDelayed,
		DeadLetters: cfg.ScaleDeadLetters, Topics: cfg.ScaleTopics}
	record, restore, err := slowlogSettings(ctx, c)
	if err != nil {
		rep.Note = fmt.Sprintf("SLOWLOG settings could not be read (%v): no figures", err)
		return rep, nil
	}
	// A slow script is what this phase looks for: the client waits for it rather than time
	// out, and never sends a call twice.
	in, err := t.openTuned(c, "scale", func(o *redis.Options) {
		o.ReadTimeout, o.MaxRetries = 2*time.Minute, -1
	})
	if err != nil {
		return rep, err
	}
	defer in.close(context.WithoutCancel(ctx))
	s := &scaleRun{in: in, cfg: cfg, payload: messages(1, cfg.PayloadBytes)[0].Payload,
		ops: map[string]*ScaleOp{}}
	start := time.Now()
	if err := s.fill(ctx); err != nil {
		return rep, fmt.Errorf("%s scale: fill: %w", t.Name, err)
	}
	defer func() { _ = restore(context.WithoutCancel(ctx)) }()
	if err := record(ctx); err != nil {
		return rep, fmt.Errorf("%s scale: CONFIG SET slowlog-*: %w", t.Name, err)
	}
	rep.FillSeconds = time.Since(start).Seconds()
	for round := range cfg.ScaleRounds + 1 {
		s.record = round > 0
		if err := s.round(ctx, round); err != nil {
			return rep, fmt.Errorf("%s scale: round %d: %w", t.Name, round, err)
		}
	}
	rep.TopicsFound = s.topicsFound
	for _, name := range s.order {
		op := *s.ops[name]
		rep.Ops = append(rep.Ops, op)
		if op.Slowest.Micros > rep.Slowest.Micros || rep.Slowest.Command == nil {
			rep.Slowest = op.Slowest
			rep.Slowest.Op = op.Name
		}
	}
	if err := restore(ctx); err != nil {
		return rep, err
	}
	return rep, in.close(ctx)
}

// slowlogSettings reads the SLOWLOG settings and returns how to make SLOWLOG keep every
// command and how to put the settings back.
func slowlogSettings(ctx context.Context, c *redis.Client) (record, restore func(context.Context) error, err error) {
	saved := map[string]string{}
	for _, name := range []string{"slowlog-log-slower-than", "slowlog-max-len"} {
		v, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return nil, nil, err
		}
		if _, ok := v[name]; !ok {
			return nil, nil, fmt.Errorf("CONFIG GET %s: not set", name)
		}
		saved[name] = v[name]
	}
	restore = func(ctx context.Context) error {
		var errs []error
		for name, v := range saved {
			errs = append(errs, c.ConfigSet(ctx, name, v).Err())
		}
		return errors.Join(errs...)
	}
	record = func(ctx context.Context) error {
		return errors.Join(c.ConfigSet(ctx, "slowlog-max-len", "100000").Err(),
			c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	}
	return record, restore, nil
}

// scaleRun is the state of one scale phase.
type scaleRun struct {
	in      *instance
	cfg     Config
	payload []byte
	// held are the deliveries claimed and held by "holder" while filling.
	held []backend.Held
	// record is false in the warm-up round.
	record      bool
	ops         map[string]*ScaleOp
	order       []string
	topicsFound int
}

func (s *scaleRun) backend() backend.Backend { return s.in.backend }

// publish stores n messages in batches of scaleBatch, each delayed by delay(i) (zero: ready).
func (s *scaleRun) publish(ctx context.Context, n int, delay func(i int) time.Duration) error {
	for i := 0; i < n; i += scaleBatch {
		msgs := make([]backend.OutMessage, min(scaleBatch, n-i))
		for j := range msgs {
			msgs[j] = backend.OutMessage{Envelope: backend.Envelope{UUID: watermill.NewUUID(), Payload: s.payload}}
			if delay != nil {
				msgs[j].Delay = delay(i + j)
			}
		}
		if _, err := s.backend().Publish(ctx, &backend.PublishParams{Topic: s.in.topic, Messages: msgs}); err != nil {
			return err
		}
	}
	return nil
}

// claim claims n ready messages as consumer, scaleBatch at a time. A claim may return
// nothing while messages are ready: the streams backend reads the stream in bounded steps
// and parks the delayed entries it meets on the way, so up to maxEmpty claims in a row may
// come back empty.
func (s *scaleRun) claim(ctx context.Context, consumer string, n int, lease time.Duration) ([]backend.Held, error) {
	held := make([]backend.Held, 0, n)
	maxEmpty := s.cfg.ScaleDelayed/scaleBatch + 10
	for empty := 0; len(held) < n; {
		ds, err := s.backend().Claim(ctx, &backend.ClaimParams{Topic: s.in.topic, Group: group,
			Consumer: consumer, Count: min(scaleBatch, n-len(held)), Lease: lease})
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			if empty++; empty > maxEmpty {
				return nil, fmt.Errorf("claimed %d of %d messages, then %d claims found none", len(held), n, empty)
			}
			continue
		}
		empty = 0
		for _, d := range ds {
			held = append(held, backend.Held{ID: d.ID, Attempt: d.Attempt})
		}
	}
	return held, nil
}

// fill builds the delayed messages, the in-flight messages, the dead letters and the
// topics. The delayed ones go first, so that the claims that follow meet them as a live
// consumer would (the streams backend parks them in the group's pending list).
func (s *scaleRun) fill(ctx context.Context) error {
	be, cfg := s.backend(), s.cfg
	last := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "         %s scale: "+format+" in %.1fs\n",
			append(append([]any{s.in.target.Name}, args...), time.Since(last).Seconds())...)
		last = time.Now()
	}
	if err := s.in.ensureGroup(ctx); err != nil {
		return err
	}
	// Due times spread over an hour, so the delayed set is not one score.
	if err := s.publish(ctx, cfg.ScaleDelayed, func(i int) time.Duration {
		return scaleDelay + time.Duration(i%3_600_000)*time.Millisecond
	}); err != nil {
		return err
	}
	step("published %d delayed", cfg.ScaleDelayed)
	if err := s.publish(ctx, cfg.ScaleInFlight, nil); err != nil {
		return err
	}
	step("published %d to hold", cfg.ScaleInFlight)
	var err error
	if s.held, err = s.claim(ctx, "holder", cfg.ScaleInFlight, scaleLease); err != nil {
		return err
	}
	step("claimed them")
	if err := s.publish(ctx, cfg.ScaleDeadLetters, nil); err != nil {
		return err
	}
	doomed, err := s.claim(ctx, "doomed", cfg.ScaleDeadLetters, scaleLease)
	if err != nil {
		return err
	}
	step("published and claimed %d to dead-letter", cfg.ScaleDeadLetters)
	for i := 0; i < len(doomed); i += scaleBatch {
		items := make([]backend.NackItem, 0, scaleBatch)
		for _, h := range doomed[i:min(i+scaleBatch, len(doomed))] {
			items = append(items, backend.NackItem{ID: h.ID, Attempt: h.Attempt, DeadLetter: true, Reason: "bench: scale"})
		}
		if _, err := be.Nack(ctx, &backend.NackParams{Topic: s.in.topic, Group: group, Consumer: "doomed", Items: items}); err != nil {
			return err
		}
	}
	step("dead-lettered them")
	if err := s.topics(ctx); err != nil {
		return err
	}
	step("registered a group on %d topics", cfg.ScaleTopics)
	return nil
}

// topics registers a group on ScaleTopics-1 more topics, 16 at a time.
func (s *scaleRun) topics(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				err := s.backend().EnsureGroup(ctx, &backend.EnsureGroupParams{Topic: fmt.Sprintf("t%05d", i), Group: group})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 1; i < s.cfg.ScaleTopics; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// round calls every path once.
func (s *scaleRun) round(ctx context.Context, round int) error {
	be, topic := s.backend(), s.in.topic
	if err := s.op(ctx, "publish 1", func() error { return s.publish(ctx, 1, nil) }); err != nil {
		return err
	}
	if err := s.op(ctx, "publish 100", func() error { return s.publish(ctx, 100, nil) }); err != nil {
		return err
	}
	var got []backend.Delivery
	if err := s.op(ctx, "claim 100", func() (err error) {
		got, err = be.Claim(ctx, &backend.ClaimParams{Topic: topic, Group: group, Consumer: "worker", Count: 100, Lease: scaleLease})
		return err
	}); err != nil {
		return err
	}
	if len(got) < 4 {
		return fmt.Errorf("claim 100 got %d with at least 101 ready", len(got))
	}
	acks, nacks := len(got)/2, len(got)*3/4
	ext := s.held[(round*100)%max(len(s.held)-100, 1):][:min(100, len(s.held))]
	if err := s.op(ctx, "extend 100", func() error {
		_, err := be.Extend(ctx, &backend.ExtendParams{Topic: topic, Group: group, Consumer: "holder", Items: ext, Lease: scaleLease})
		return err
	}); err != nil {
		return err
	}
	held := func(ds []backend.Delivery) []backend.Held {
		out := make([]backend.Held, len(ds))
		for i, d := range ds {
			out[i] = backend.Held{ID: d.ID, Attempt: d.Attempt}
		}
		return out
	}
	nack := func(ds []backend.Delivery, dead bool) []backend.NackItem {
		out := make([]backend.NackItem, len(ds))
		for i, d := range ds {
			out[i] = backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: dead, Reason: "bench: scale"}
		}
		return out
	}
	if err := s.op(ctx, "ack 50", func() error {
		_, err := be.Ack(ctx, &backend.AckParams{Topic: topic, Group: group, Consumer: "worker", Items: held(got[:acks])})
		return err
	}); err != nil {
		return err
	}
	if err := s.op(ctx, "nack 25", func() error {
		_, err := be.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "worker", Items: nack(got[acks:nacks], false)})
		return err
	}); err != nil {
		return err
	}
	if err := s.op(ctx, "nack 25 to dead letters", func() error {
		_, err := be.Nack(ctx, &backend.NackParams{Topic: topic, Group: group, Consumer: "worker", Items: nack(got[nacks:], true)})
		return err
	}); err != nil {
		return err
	}
	// Some work for reclaim: 100 leases that expire and 100 delayed messages that come due.
	if err := s.publish(ctx, 100, nil); err != nil {
		return err
	}
	if _, err := s.claim(ctx, "dying", 100, 10*time.Millisecond); err != nil {
		return err
	}
	if err := s.publish(ctx, 100, func(int) time.Duration { return time.Millisecond }); err != nil {
		return err
	}
	time.Sleep(50 * time.Millisecond)
	if err := s.op(ctx, "reclaim", func() error {
		_, err := be.Reclaim(ctx, &backend.ReclaimParams{Topic: topic, Group: group, MaxDeliveries: pubsub.MaxDeliveriesDefault,
			OrphanLease: pubsub.LeaseDefault})
		return err
	}); err != nil {
		return err
	}
	var st backend.Stats
	if err := s.op(ctx, "stats", func() (err error) {
		st, err = be.Stats(ctx, &backend.StatsParams{Topic: topic, Group: group})
		return err
	}); err != nil {
		return err
	}
	var page []backend.DeadLetter
	if err := s.op(ctx, "dead letters, first page", func() (err error) {
		page, err = be.DeadLetters(ctx, &backend.DeadLettersParams{Topic: topic, Group: group, Count: 100})
		return err
	}); err != nil {
		return err
	}
	if err := s.op(ctx, "dead letters, last page", func() error {
		_, err := be.DeadLetters(ctx, &backend.DeadLettersParams{Topic: topic, Group: group,
			Offset: max(int(st.Dead)-100, 0), Count: 100})
		return err
	}); err != nil {
		return err
	}
	ids := make([]string, len(page))
	for i, dl := range page {
		ids[i] = dl.ID
	}
	if err := s.op(ctx, "requeue 100 dead letters", func() error {
		_, err := be.RequeueDeadLetters(ctx, &backend.RequeueParams{Topic: topic, Group: group, IDs: ids})
		return err
	}); err != nil {
		return err
	}
	if err := s.op(ctx, "purge 100 dead letters", func() error {
		_, err := be.PurgeDeadLetters(ctx, &backend.PurgeParams{Topic: topic, Group: group, All: true, Limit: 100})
		return err
	}); err != nil {
		return err
	}
	if lister, ok := be.(backend.TopicLister); ok {
		if err := s.op(ctx, "topics", func() error {
			found, err := lister.TopicNames(ctx)
			s.topicsFound = len(found)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// op runs f with SLOWLOG emptied before and read after, and records the slowest command
// that the backend's client sent meanwhile.
func (s *scaleRun) op(ctx context.Context, name string, f func() error) error {
	c := s.in.client
	if s.record {
		if err := c.SlowLogReset(ctx).Err(); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	took := time.Since(start)
	if !s.record {
		return nil
	}
	entries, err := c.SlowLogGet(ctx, 100_000).Result()
	if err != nil {
		return err
	}
	op, ok := s.ops[name]
	if !ok {
		op = &ScaleOp{Name: name}
		s.ops[name] = op
		s.order = append(s.order, name)
	}
	op.Calls++
	op.GoMaxMS = max(op.GoMaxMS, msOf(took))
	for _, e := range entries {
		if e.ClientName != s.in.prefix {
			continue
		}
		op.RedisCalls++
		if us := e.Duration.Microseconds(); us > op.Slowest.Micros || op.Slowest.Command == nil {
			op.Slowest = SlowCall{Micros: us, Command: firstArgs(e.Args)}
		}
	}
	return nil
}

// firstArgs is args[0..3], each cut to 64 bytes (SLOWLOG already cuts long ones to 128).
func firstArgs(args []string) []string {
	out := make([]string, 0, 4)
	for _, a := range args[:min(len(args), 4)] {
		if len(a) > 64 {
			a = a[:64] + "…"
		}
		out = append(out, a)
	}
	return out
}
