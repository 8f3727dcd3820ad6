package cli

// The scenario of the demo. Each phase prints what it sees happen: deliveries as handlers
// get them, and Redis state read back through the backend.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/pubsub"
)

func newOrder(name string, poison bool) *message.Message {
	body := fmt.Sprintf(`{"order":%q,"amount_cents":%d}`, name, 1000+len(name)*7)
	msg := message.NewMessage(watermill.NewUUID(), []byte(body))
	msg.Metadata.Set("order", name)
	if poison {
		msg.Metadata.Set("poison", "true")
	}
	return msg
}

// publish publishes msgs in one Publish call and describes the round trips it made, from
// the commands the client actually sent.
func (d *demo) publish(msgs ...*message.Message) (string, error) {
	d.trips.start()
	err := d.pub.Publish(demoTopic, msgs...)
	all := d.trips.stop()
	if err != nil {
		return "", fmt.Errorf("publish: %w", err)
	}
	// A connection the pool opened meanwhile (HELLO, then CLIENT SETINFO) is the client's
	// set-up, not the publish: told apart, so that the count says what the publish costs.
	var cmds, setup []string
	for _, c := range all {
		if c == "hello" || strings.HasPrefix(c, "pipeline[client") {
			setup = append(setup, c)
		} else {
			cmds = append(cmds, c)
		}
	}
	desc := fmt.Sprintf("%d round trip", len(cmds))
	if len(cmds) != 1 {
		desc += "s"
	}
	desc += ": " + strings.Join(cmds, ", ")
	noscript, runs := false, 0
	for _, c := range cmds {
		switch {
		case strings.HasSuffix(c, "NOSCRIPT"):
			noscript = true
		case c == "evalsha" || c == "eval":
			runs++
		}
	}
	if noscript {
		desc += "\n    - Redis did not have publish.lua cached yet (NOSCRIPT), so it was sent once with EVAL"
	}
	if len(setup) > 0 {
		desc += "\n    - the client also opened a connection (" + strings.Join(setup, ", ") + ")"
	}
	if runs > 1 {
		desc += "\n    - the first run found the backend's cached group list of the topic out of date," +
			"\n      wrote nothing and returned the registered groups; the next run stored the batch"
	}
	return desc, nil
}

// batchPhase publishes a batch and lets one subscriber handle it: one order fails once and
// is redelivered after its backoff, the poison order fails until it is dead-lettered.
func (d *demo) batchPhase(ctx context.Context, logger watermill.LoggerAdapter) error {
	const nackOnce, poison = "order-3", "order-6"
	var msgs []*message.Message
	var names []string
	for i := 1; i <= 6; i++ {
		name := fmt.Sprintf("order-%d", i)
		names = append(names, name)
		msgs = append(msgs, newOrder(name, name == poison))
	}
	d.printf("\n1. Batch publish, one subscriber\n")
	d.start = time.Now() // times below are counted from the first publish
	trips, err := d.publish(msgs...)
	if err != nil {
		return err
	}
	st, err := d.stats(ctx)
	if err != nil {
		return err
	}
	d.printf("  %s published %s in one Publish call, %s\n  group %s now has %d ready\n",
		d.since(time.Now()), strings.Join(names, ", "), trips, demoGroup, st.Ready)
	d.printf("  sub-1 starts: Concurrency 1, MaxDeliveries %d, nack backoff %v doubling up to %v;\n"+
		"  its handler fails %s once and fails %s every time (poison)\n",
		demoMaxDeliveries, demoNackMin, demoNackMax, nackOnce, poison)

	sub, err := d.subscriber("sub-1", logger)
	if err != nil {
		return err
	}
	defer sub.Close()
	failed := map[string]bool{}
	handle := func(msg *message.Message) (bool, string) {
		order := msg.Metadata.Get("order")
		switch {
		case msg.Metadata.Get("poison") == "true":
			return false, "poison: the handler always fails"
		case order == nackOnce && !failed[order]:
			failed[order] = true
			return false, "simulated transient failure"
		}
		return true, ""
	}
	done := func() bool {
		acked := d.ackedOrders()
		return len(acked) == 5 && d.attempts(poison) >= demoMaxDeliveries
	}
	if err := d.consume(ctx, sub, "sub-1", handle, done); err != nil {
		return err
	}
	return d.waitSettled(ctx, 1)
}

// printSettled reports the group's state once it has settled.
func (d *demo) printSettled(st backend.Stats) {
	d.printf("  %s group settled: ready %d, delayed %d, pending %d, dead %d\n",
		d.since(time.Now()), st.Ready, st.Delayed, st.Pending, st.Dead)
}

// crashPhase has a consumer claim a message and "crash" without acking; a second subscriber
// gets the message once the lease expired.
func (d *demo) crashPhase(ctx context.Context, conn *redisConn, logger watermill.LoggerAdapter) error {
	d.printf("\n2. A consumer crashes holding a message\n")
	trips, err := d.publish(newOrder("order-7", false))
	if err != nil {
		return err
	}
	d.printf("  %s published order-7, %s\n", d.since(time.Now()), trips)

	// The crashing worker has its own client and backend, as another process would; it
	// closes them without acking, which is all a crash leaves behind.
	crashClient := redis.NewClient(conn.client.Options())
	crashBackend, err := list.New(crashClient, list.Options{Prefix: d.opts.prefix})
	if err != nil {
		_ = crashClient.Close()
		return err
	}
	claimed, err := crashBackend.Claim(ctx, &backend.ClaimParams{
		Topic: demoTopic, Group: demoGroup, Consumer: "worker-crashy",
		Count: 1, Lease: demoCrashLease, Block: time.Second,
	})
	_ = crashBackend.Close()
	_ = crashClient.Close()
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if len(claimed) != 1 {
		return fmt.Errorf("worker-crashy claimed %d messages, expected 1", len(claimed))
	}
	c := claimed[0]
	crashAt := time.Now()
	order := c.Envelope.Metadata["order"]
	d.printf("  %s worker-crashy claims %s (delivery %s, attempt %d) with a %v lease, then dies without acking\n",
		d.since(crashAt), order, c.ID, c.Attempt, demoCrashLease)
	d.printf("  %s sub-2 starts (lease %v, reclaim loop every ~%v)\n", d.since(time.Now()), demoSubLease, demoReclaimEvery)

	sub, err := d.subscriber("sub-2", logger)
	if err != nil {
		return err
	}
	defer sub.Close()
	handle := func(msg *message.Message) (bool, string) {
		if pubsub.DeliveryID(msg) == c.ID {
			return true, fmt.Sprintf("worker-crashy claimed it %.2fs earlier and never acked", time.Since(crashAt).Seconds())
		}
		return true, ""
	}
	done := func() bool {
		_, ok := d.ackedOrders()[order]
		return ok
	}
	d.mu.Lock()
	d.events = append(d.events, event{order: order, deliveryID: c.ID, attempt: c.Attempt})
	d.mu.Unlock()
	if err := d.consume(ctx, sub, "sub-2", handle, done); err != nil {
		return err
	}
	return d.waitSettled(ctx, 1)
}

// consume runs handle on every message of a new Subscribe until done reports true. handle
// returns whether to ack and a note to print.
func (d *demo) consume(ctx context.Context, sub *pubsub.Subscriber, consumer string,
	handle func(*message.Message) (bool, string), done func() bool) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, demoPhaseTimeout)
	defer cancel()
	msgs, err := sub.Subscribe(ctx, demoTopic)
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	lastNack := map[string]time.Time{}
	for !done() {
		var msg *message.Message
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return parent.Err()
			}
			return fmt.Errorf("%s: scenario did not complete in %v", consumer, demoPhaseTimeout)
		case m, ok := <-msgs:
			if !ok {
				return fmt.Errorf("%s: subscription closed early", consumer)
			}
			msg = m
		}
		now := time.Now()
		ok, note := handle(msg)
		ev := event{order: msg.Metadata.Get("order"),
			deliveryID: pubsub.DeliveryID(msg), attempt: pubsub.Attempt(msg), acked: ok}
		line := fmt.Sprintf("  %s %s got %-8s delivery %s, attempt %d", d.since(now), consumer, ev.order, ev.deliveryID, ev.attempt)
		if t, ok := lastNack[ev.deliveryID]; ok {
			line += fmt.Sprintf(" (%.2fs after its nack)", now.Sub(t).Seconds())
		}
		if ok {
			line += " -> ack"
		} else {
			line += " -> nack"
			lastNack[ev.deliveryID] = now
		}
		if note != "" {
			line += ": " + note
		}
		if !ok && ev.attempt >= demoMaxDeliveries {
			line += fmt.Sprintf(" (delivery %d of MaxDeliveries %d)", ev.attempt, demoMaxDeliveries)
		}
		d.mu.Lock()
		d.events = append(d.events, ev)
		fmt.Fprintln(d.out, line)
		d.mu.Unlock()
		if ok {
			msg.Ack()
		} else {
			pubsub.SetNackReason(msg, note) // kept if this nack dead-letters it
			msg.Nack()
		}
	}
	return nil
}

func (d *demo) subscriber(consumer string, logger watermill.LoggerAdapter) (*pubsub.Subscriber, error) {
	return pubsub.NewSubscriber(d.be, pubsub.SubscriberConfig{
		Group:           demoGroup,
		Consumer:        consumer,
		Concurrency:     1,
		Lease:           demoSubLease,
		ReclaimInterval: demoReclaimEvery,
		MaxDeliveries:   demoMaxDeliveries,
		NackBackoff:     pubsub.ExponentialBackoff(demoNackMin, demoNackMax),
		Block:           200 * time.Millisecond,
		CloseTimeout:    2 * time.Second,
	}, logger)
}

// ackedOrders returns the orders some handler acked.
func (d *demo) ackedOrders() map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	acked := map[string]bool{}
	for _, e := range d.events {
		if e.acked {
			acked[e.order] = true
		}
	}
	return acked
}

// attempts returns the highest attempt seen for an order.
func (d *demo) attempts(order string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, e := range d.events {
		if e.order == order && e.attempt > n {
			n = e.attempt
		}
	}
	return n
}

// waitSettled waits until the group has nothing ready, delayed or pending and holds dead
// dead letters (acks are coalesced and reach Redis a moment after the handler returns), then
// prints that state.
func (d *demo) waitSettled(ctx context.Context, dead int64) error {
	deadline := time.Now().Add(demoPhaseTimeout)
	for {
		st, err := d.stats(ctx)
		if err != nil {
			return err
		}
		if st.Ready == 0 && st.Delayed == 0 && st.Pending == 0 && st.Dead == dead {
			d.printSettled(st)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("group did not settle: ready %d, delayed %d, pending %d, dead %d (want 0, 0, 0, %d)",
				st.Ready, st.Delayed, st.Pending, st.Dead, dead)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *demo) stats(ctx context.Context) (backend.Stats, error) {
	return d.be.Stats(ctx, &backend.StatsParams{Topic: demoTopic, Group: demoGroup})
}

func (d *demo) deadLetterPhase(ctx context.Context) error {
	dls, err := d.be.DeadLetters(ctx, &backend.DeadLettersParams{Topic: demoTopic, Group: demoGroup})
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	d.printf("\n3. Dead letters of %s/%s: %d\n", demoTopic, demoGroup, len(dls))
	for _, dl := range dls {
		order := dl.Envelope.Metadata["order"]
		if order == "" {
			order = fmt.Sprintf("(%d undecodable bytes)", len(dl.Raw))
		}
		d.printf("  %s: delivery %s, %d attempts, dead at %s, reason %q\n",
			order, dl.ID, dl.Attempts, dl.DeadAt.Local().Format("15:04:05.000"), dl.Reason)
	}
	return nil
}

func (d *demo) statsPhase(ctx context.Context) error {
	st, err := d.stats(ctx)
	if err != nil {
		return err
	}
	c := st.Counters
	d.printf("\n4. Stats of %s/%s (kept in Redis)\n", st.Topic, st.Group)
	d.printf("  now:      ready %d, delayed %d, pending %d, dead %d\n", st.Ready, st.Delayed, st.Pending, st.Dead)
	d.printf("  counters: published %d, claimed %d, acked %d, nacked %d, reclaimed %d, dead-lettered %d, stale acks %d, stale nacks %d\n",
		c.Published, c.Claimed, c.Acked, c.Nacked, c.Reclaimed, c.DeadLettered, c.StaleAcks, c.StaleNacks)
	d.printf("  deliveries per order:  %s\n", d.callSummary())
	return nil
}

// callSummary lists how many deliveries each order got, from the events seen.
func (d *demo) callSummary() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	counts := map[string]int{}
	for _, e := range d.events {
		counts[e.order]++
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, counts[n])
	}
	return strings.Join(parts, ", ")
}
