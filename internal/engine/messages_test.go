package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/adapters/zset"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/redistest"
	"github.com/stretchr/testify/require"
)

// adminEnv is a backend over the engine with the test helpers of adaptertest.
type adminEnv struct {
	*adaptertest.Env
	e *engine.Engine
}

// newAdminEnv returns the list or zset backend under a prefix of its own.
func newAdminEnv(t *testing.T, name string) adminEnv {
	c, prefix := adaptertest.Server(t)
	return adminEnvOn(t, name, c, prefix)
}

// adminEnvOn returns the list or zset backend on c under prefix.
func adminEnvOn(t *testing.T, name string, c *redis.Client, prefix string) adminEnv {
	if name == "list" {
		l, err := list.New(c, list.Options{Prefix: prefix})
		require.NoError(t, err)
		return adminEnv{adaptertest.NewEnv(t, c, prefix, l), engineOf(l)}
	}
	z, err := zset.New(c, zset.Options{Prefix: prefix})
	require.NoError(t, err)
	return adminEnv{adaptertest.NewEnv(t, c, prefix, z), engineOf(z)}
}

// each runs f on a fresh env of each backend.
func each(t *testing.T, f func(t *testing.T, a adminEnv)) {
	t.Parallel()
	for _, name := range []string{"list", "zset"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, newAdminEnv(t, name))
		})
	}
}

const topic, group = "orders", "billing"

func payloads(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// page reads one page.
func (a adminEnv) page(state backend.MessageState, cursor string, count int) backend.MessagePage {
	a.T.Helper()
	p, err := a.e.Messages(a.Ctx, &backend.MessagesParams{Topic: topic, Group: group, State: state, Cursor: cursor, Count: count})
	require.NoError(a.T, err)
	return p
}

// all reads every page of state, count at a time, and returns the messages and the number of
// pages.
func (a adminEnv) all(state backend.MessageState, count int) ([]backend.MessageInfo, int) {
	a.T.Helper()
	var out []backend.MessageInfo
	cursor, pages := "", 0
	for {
		p := a.page(state, cursor, count)
		pages++
		require.LessOrEqual(a.T, len(p.Messages), count)
		out = append(out, p.Messages...)
		if p.Next == "" {
			return out, pages
		}
		require.Less(a.T, pages, 100, "the listing ends")
		cursor = p.Next
	}
}

func (a adminEnv) message(id string) (backend.MessageInfo, error) {
	return a.e.Message(a.Ctx, &backend.MessageParams{Topic: topic, Group: group, ID: id})
}

func (a adminEnv) show(id string) backend.MessageInfo {
	a.T.Helper()
	m, err := a.message(id)
	require.NoError(a.T, err)
	return m
}

func (a adminEnv) remove(g, id string) error {
	return a.e.DeleteMessage(a.Ctx, &backend.MessageParams{Topic: topic, Group: g, ID: id})
}

func (a adminEnv) run(id string) error {
	return a.e.RunMessage(a.Ctx, &backend.MessageParams{Topic: topic, Group: group, ID: id})
}

func infoIDs(ms []backend.MessageInfo) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// sorted returns ids sorted as numbers.
func sorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return map[bool]int{true: -1, false: 1}[a < b]
	})
	return out
}

// ids are the IDs of the messages a test published, in publish order; n(1) is the first.
type ids []string

// n is the ID of the i-th message published (from 1).
func (s ids) n(i int) string { return s[i-1] }

// span is the IDs of the from-th to the to-th message published, both included.
func (s ids) span(from, to int) []string { return slices.Clone(s[from-1 : to]) }

// pick is the IDs of the messages published at each of places.
func (s ids) pick(places ...int) []string {
	out := make([]string, len(places))
	for i, p := range places {
		out[i] = s.n(p)
	}
	return out
}

// fourStates publishes 7 messages into each state of the group: 1-7 pending (held by c1),
// 8-14 dead, 15-21 ready, 22-28 delayed (due an hour and i seconds from now). It returns the
// IDs of the 28 in publish order.
func (a adminEnv) fourStates() ids {
	a.T.Helper()
	a.EnsureGroup(topic, group)
	out := ids(a.Publish(topic, payloads("m", 21)...))
	require.Equal(a.T, out.span(1, 7), sorted(adaptertest.IDs(a.Claim(topic, group, "c1", 7))))
	var dead []backend.NackItem
	for _, d := range a.Claim(topic, group, "c2", 7) {
		dead = append(dead, backend.NackItem{ID: d.ID, Attempt: d.Attempt, DeadLetter: true, Reason: "bad " + d.ID})
	}
	require.Equal(a.T, 7, a.Nack(topic, group, "c2", 0, dead...).DeadLettered)
	for i := range 7 {
		out = append(out, a.PublishDelayed(topic, time.Hour+time.Duration(7-i)*time.Second, fmt.Sprintf("d%d", i))...)
	}
	require.Len(a.T, out, 28)
	return out
}

// Every state pages in its order, three at a time, each message once, with what the state
// says about it.
func TestMessagesPagesEachStateInOrder(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		id := a.fourStates()

		ready, pages := a.all(backend.StateReady, 3)
		require.Equal(t, id.span(15, 21), infoIDs(ready), "delivery order")
		require.Equal(t, 3, pages)
		for i, m := range ready {
			require.Equal(t, backend.StateReady, m.State)
			require.Equal(t, fmt.Sprintf("m%d", 14+i), string(m.Envelope.Payload))
			require.Zero(t, m.Attempts)
		}

		// delayed 22..28 were published due latest first.
		delayed, _ := a.all(backend.StateDelayed, 3)
		require.Equal(t, id.pick(28, 27, 26, 25, 24, 23, 22), infoIDs(delayed), "due order")
		for i, m := range delayed {
			require.Equal(t, backend.StateDelayed, m.State)
			require.WithinDuration(t, time.Now().Add(time.Hour), m.Due, 10*time.Second)
			if i > 0 {
				require.True(t, m.Due.After(delayed[i-1].Due))
			}
		}

		pending, _ := a.all(backend.StatePending, 3)
		require.Equal(t, id.span(1, 7), sorted(infoIDs(pending)))
		for i, m := range pending {
			require.Equal(t, "c1", m.Consumer)
			require.Equal(t, 1, m.Attempts)
			require.Greater(t, m.LeaseLeft, 50*time.Second)
			require.LessOrEqual(t, m.LeaseLeft, time.Minute)
			require.WithinDuration(t, time.Now(), m.Since, 10*time.Second)
			if i > 0 {
				require.GreaterOrEqual(t, m.LeaseLeft, pending[i-1].LeaseLeft-time.Second, "expiry order")
			}
		}

		dead, _ := a.all(backend.StateDead, 3)
		require.Equal(t, id.span(8, 14), sorted(infoIDs(dead)))
		for i, m := range dead {
			require.Equal(t, "bad "+m.ID, m.Reason)
			require.Equal(t, 1, m.Attempts)
			require.WithinDuration(t, time.Now(), m.DeadAt, 10*time.Second)
			if i > 0 {
				require.False(t, m.DeadAt.Before(dead[i-1].DeadAt), "death order")
			}
		}

		empty := a.page(backend.StateReady, "", 0)
		require.Len(t, empty.Messages, 7, "Count 0 reads the default page")
		require.Empty(t, empty.Next)
	})
}

// A message that leaves a state between two pages is not listed by the next; what stays is
// listed once.
func TestMessagesSkipWhatLeftBetweenPages(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		id := a.fourStates()

		// ready 15..21: a claim of five takes the first page and two more.
		p1 := a.page(backend.StateReady, "", 3)
		require.Equal(t, id.span(15, 17), infoIDs(p1.Messages))
		claimed := a.Claim(topic, group, "c3", 5)
		require.Equal(t, id.span(15, 19), adaptertest.IDs(claimed))
		p2 := a.page(backend.StateReady, p1.Next, 3)
		require.Equal(t, id.span(20, 21), infoIDs(p2.Messages))
		require.Empty(t, p2.Next)

		// A release puts 15 back at the consume end, before the cursor: not listed again.
		p1 = a.page(backend.StateReady, "", 1)
		require.Equal(t, id.pick(20), infoIDs(p1.Messages))
		a.Nack(topic, group, "c3", 0, backend.NackItem{ID: id.n(15), Attempt: 1, Release: true})
		rest, _ := a.allFrom(backend.StateReady, p1.Next, 1)
		require.Equal(t, id.pick(21), infoIDs(rest))

		// delayed 28..22: run the next page's first one, and the cursor's own.
		p1 = a.page(backend.StateDelayed, "", 3)
		require.Equal(t, id.pick(28, 27, 26), infoIDs(p1.Messages))
		require.NoError(t, a.run(id.n(25)))
		require.NoError(t, a.run(id.n(26)))
		rest, _ = a.allFrom(backend.StateDelayed, p1.Next, 3)
		require.Equal(t, id.pick(24, 23, 22), infoIDs(rest))

		// pending: ack what the next page would start with.
		all, _ := a.all(backend.StatePending, 100)
		p1 = a.page(backend.StatePending, "", 3)
		next := all[len(p1.Messages)]
		require.Equal(t, 1, a.Ack(topic, group, "x", backend.Delivery{ID: next.ID, Attempt: next.Attempts}).Acked)
		rest, _ = a.allFrom(backend.StatePending, p1.Next, 3)
		seen := append(infoIDs(p1.Messages), infoIDs(rest)...)
		require.NotContains(t, seen, next.ID)
		require.Len(t, seen, len(all)-1)
	})
}

// allFrom reads the pages of state from cursor on.
func (a adminEnv) allFrom(state backend.MessageState, cursor string, count int) ([]backend.MessageInfo, int) {
	a.T.Helper()
	var out []backend.MessageInfo
	for pages := 1; ; pages++ {
		p := a.page(state, cursor, count)
		out = append(out, p.Messages...)
		if p.Next == "" {
			return out, pages
		}
		require.Less(a.T, pages, 100)
		cursor = p.Next
	}
}

// Message tells each state with what it knows of it.
func TestMessageShowsEachState(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		id := a.fourStates()

		m := a.show(id.n(3))
		require.Equal(t, backend.StatePending, m.State)
		require.Equal(t, "c1", m.Consumer)
		require.Equal(t, 1, m.Attempts)
		require.Greater(t, m.LeaseLeft, 50*time.Second)
		require.Equal(t, "m2", string(m.Envelope.Payload))
		require.Equal(t, topic, m.Topic)
		require.Equal(t, group, m.Group)

		m = a.show(id.n(9))
		require.Equal(t, backend.StateDead, m.State)
		require.Equal(t, "bad "+id.n(9), m.Reason)
		require.Equal(t, 1, m.Attempts)
		require.False(t, m.DeadAt.IsZero())

		m = a.show(id.n(21))
		require.Equal(t, backend.StateReady, m.State)
		require.Zero(t, m.Attempts)
		require.True(t, m.Due.IsZero())
		require.Equal(t, "uuid-m20", m.Envelope.UUID)

		m = a.show(id.n(24))
		require.Equal(t, backend.StateDelayed, m.State)
		require.WithinDuration(t, time.Now().Add(time.Hour+4*time.Second), m.Due, 5*time.Second)

		// A retry keeps its attempts: ready again after one, delayed after another.
		d := a.Claim(topic, group, "c4", 1)[0]
		a.Nack(topic, group, "c4", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt})
		require.Equal(t, 1, a.show(d.ID).Attempts)
		d = a.Claim(topic, group, "c4", 1)[0]
		a.Nack(topic, group, "c4", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour})
		m = a.show(d.ID)
		require.Equal(t, backend.StateDelayed, m.State)
		require.Equal(t, 2, m.Attempts)

		// An expired lease waits for Reclaim: negative lease left.
		a.ExpireLease(a.e.Keys(topic, group).Pending(), id.n(4))
		require.Negative(t, a.show(id.n(4)).LeaseLeft)

		// Acked, never published, or not an ID as the backend writes it: not found.
		a.Ack(topic, group, "c1", backend.Delivery{ID: id.n(5), Attempt: 1})
		for _, bad := range []string{id.n(5), adaptertest.IDAfter(t, id.n(28), 71), "abc", "00" + id.n(7), ""} {
			_, err := a.message(bad)
			require.ErrorIs(t, err, backend.ErrMessageNotFound, bad)
		}
	})
}

// A body that is gone or cannot be decoded is shown as such.
func TestMessageShowsAMissingOrCorruptBody(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		a.EnsureGroup(topic, group)
		ids := a.Publish(topic, "a")
		require.NoError(t, a.e.InjectCorrupt(a.Ctx, topic, group, []byte("\xffjunk")))
		require.NoError(t, a.e.DeleteBody(a.Ctx, topic, ids[0]))

		ms, _ := a.all(backend.StateReady, 10)
		require.Len(t, ms, 2)
		require.True(t, ms[0].BodyMissing)
		require.Equal(t, []byte("\xffjunk"), ms[1].Raw)
		require.ErrorIs(t, ms[1].Err, backend.ErrCorruptEntry)
		require.True(t, a.show(ms[1].ID).Raw != nil)
	})
}

// DeleteMessage in each state: the group never gets it again, another group still does, and
// its body goes with the last group that held it.
func TestDeleteMessageInEachState(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		a.EnsureGroup(topic, "other")
		id := a.fourStates()
		k := a.e.Keys(topic, group)
		// 1-7 pending, 8-14 dead, 15-21 ready, 22-28 delayed; 29 is ready for the group alone
		// (other acks its copy), 30 too.
		id = append(id, a.Publish(topic, "solo", "solo2")...)
		for _, d := range a.Claim(topic, "other", "o", 30) {
			if d.ID == id.n(29) || d.ID == id.n(30) {
				a.Ack(topic, "other", "o", d)
			} else {
				a.Nack(topic, "other", "o", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Release: true})
			}
		}

		gone := id.pick(2, 9, 16, 23, 29)
		for _, id := range gone {
			require.NoError(t, a.remove(group, id), id)
			_, err := a.message(id)
			require.ErrorIs(t, err, backend.ErrMessageNotFound, "%s is gone", id)
			require.ErrorIs(t, a.remove(group, id), backend.ErrMessageNotFound, "twice")
		}
		for _, s := range backend.States {
			ms, _ := a.all(s, 100)
			for _, id := range gone {
				require.NotContains(t, infoIDs(ms), id, "%s is not listed as %s", id, s)
			}
		}
		// A holder's ack of the deleted pending message is stale.
		res := a.Ack(topic, group, "c1", backend.Delivery{ID: id.n(2), Attempt: 1})
		require.Equal(t, 0, res.Acked)
		require.Equal(t, 1, res.Stale)

		// Bodies shared with the other group stay; 29's was the group's alone. A ready
		// message's body goes when a claim drops it.
		bodies := a.Hash(k.Bodies())
		for _, shared := range id.pick(2, 9, 16, 23) {
			require.Contains(t, bodies, shared)
		}
		require.Contains(t, bodies, id.n(29), "ready: freed by the claim that reaches it")

		// The group gets none of them, whatever comes due.
		for _, delayed := range id.pick(22, 24, 25, 26, 27, 28) {
			require.NoError(t, a.run(delayed))
		}
		var got []string
		for ds := a.Claim(topic, group, "c5", 100); len(ds) > 0; ds = a.Claim(topic, group, "c5", 100) {
			got = append(got, adaptertest.IDs(ds)...)
		}
		require.ElementsMatch(t, id.pick(15, 17, 18, 19, 20, 21, 22, 24, 25, 26, 27, 28, 30), got)
		require.NotContains(t, a.Hash(k.Bodies()), id.n(29))
		require.Empty(t, a.Hash(k.Retries()), "the claim dropped the marks")

		// The other group gets every one, 29 and 30 acked before.
		var other []string
		for ds := a.Claim(topic, "other", "o", 100); len(ds) > 0; ds = a.Claim(topic, "other", "o", 100) {
			other = append(other, adaptertest.IDs(ds)...)
		}
		require.Len(t, other, 21, "1-21; delayed 22-28 are not due for it")
	})
}

// A deleted message whose body no other group holds frees its body at once, in every state
// but ready.
func TestDeleteMessageFreesItsBody(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		id := a.fourStates()
		k := a.e.Keys(topic, group)
		for _, gone := range id.pick(2, 9, 23) {
			require.NoError(t, a.remove(group, gone))
			require.NotContains(t, a.Hash(k.Bodies()), gone)
		}
		require.NoError(t, a.remove(group, id.n(16)))
		require.Contains(t, a.Hash(k.Bodies()), id.n(16))
		require.Equal(t, id.pick(15, 17, 18, 19, 20, 21), adaptertest.IDs(a.Claim(topic, group, "c", 7)))
		require.NotContains(t, a.Hash(k.Bodies()), id.n(16), "the claim that reached it freed it")
	})
}

// RunMessage makes a delayed message claimable at once; a message in another state is not
// delayed.
func TestRunMessage(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		a.EnsureGroup(topic, group)
		ids := a.PublishDelayed(topic, time.Hour, "later")
		ready := a.Publish(topic, "now")
		require.ErrorIs(t, a.run(ready[0]), backend.ErrNotDelayed)
		require.NoError(t, a.run(ids[0]))
		require.Equal(t, backend.StateReady, a.show(ids[0]).State)
		require.ElementsMatch(t, []string{ready[0], ids[0]}, adaptertest.IDs(a.Claim(topic, group, "c", 10)))
		require.ErrorIs(t, a.run(ids[0]), backend.ErrNotDelayed, "pending")
		require.ErrorIs(t, a.run(adaptertest.IDAfter(t, ready[0], 98)), backend.ErrMessageNotFound, "never published")
	})
}

// Bad input gets a typed error.
func TestMessagesBadInput(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		a.fourStates()
		page := a.page(backend.StateDelayed, "", 2)
		for _, c := range []string{"junk", "ready" + page.Next[len("delayed"):], "delayed:x:1:22", "delayed:d:1:a b", "delayed:d:zz:22"} {
			_, err := a.e.Messages(a.Ctx, &backend.MessagesParams{Topic: topic, Group: group, State: backend.StateDelayed, Cursor: c})
			require.ErrorIs(t, err, backend.ErrBadCursor, c)
		}
		_, err := a.e.Messages(a.Ctx, &backend.MessagesParams{Topic: topic, Group: group, State: "stuck"})
		require.ErrorIs(t, err, backend.ErrInvalidConfig)
		_, err = a.e.Messages(a.Ctx, &backend.MessagesParams{Topic: topic, Group: group, State: backend.StateDead, Count: -1})
		require.ErrorIs(t, err, backend.ErrInvalidConfig)
		_, err = a.e.Messages(a.Ctx, &backend.MessagesParams{Topic: topic, Group: "nobody", State: backend.StateDead})
		require.ErrorIs(t, err, backend.ErrGroupNotFound)
		_, err = a.e.Messages(a.Ctx, &backend.MessagesParams{Topic: "a{b", Group: group, State: backend.StateDead})
		require.ErrorIs(t, err, backend.ErrInvalidName)
		for _, call := range []func(*backend.MessageParams) error{
			func(p *backend.MessageParams) error { _, err := a.e.Message(a.Ctx, p); return err },
			func(p *backend.MessageParams) error { return a.e.DeleteMessage(a.Ctx, p) },
			func(p *backend.MessageParams) error { return a.e.RunMessage(a.Ctx, p) },
		} {
			require.ErrorIs(t, call(&backend.MessageParams{Topic: topic, Group: "nobody", ID: "1"}), backend.ErrGroupNotFound)
			require.ErrorIs(t, call(&backend.MessageParams{Topic: topic, Group: "no:colon", ID: "1"}), backend.ErrInvalidName)
		}
	})
}

// Deleted ready messages, and messages acked late while they waited, are hidden: pages fill
// up past them.
func TestMessagesHideWhatIsMarkedAcked(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		a.EnsureGroup(topic, group)
		id := ids(a.Publish(topic, payloads("m", 10)...))
		for _, gone := range id.pick(2, 4, 5) {
			require.NoError(t, a.remove(group, gone))
		}
		var pages [][]string
		for cursor := ""; ; {
			p := a.page(backend.StateReady, cursor, 3)
			pages = append(pages, infoIDs(p.Messages))
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		require.Equal(t, [][]string{id.pick(1, 3, 6), id.pick(7, 8, 9), id.pick(10)}, pages)

		// A late ack of a message that waits delayed after a nack.
		d := a.Claim(topic, group, "c", 1)[0]
		a.Nack(topic, group, "c", 0, backend.NackItem{ID: d.ID, Attempt: d.Attempt, Delay: time.Hour})
		require.Equal(t, backend.StateDelayed, a.show(d.ID).State)
		res := a.Ack(topic, group, "c", d)
		require.Equal(t, 1, res.Acked)
		_, err := a.message(d.ID)
		require.ErrorIs(t, err, backend.ErrMessageNotFound)
		delayed, _ := a.all(backend.StateDelayed, 10)
		require.Empty(t, delayed)
	})
}

// A dead letter requeued between two pages of dead letters is not listed by the next.
func TestMessagesSkipARequeuedDeadLetter(t *testing.T) {
	each(t, func(t *testing.T, a adminEnv) {
		a.fourStates()
		all, _ := a.all(backend.StateDead, 100)
		p1 := a.page(backend.StateDead, "", 2)
		requeued := []string{p1.Messages[1].ID, all[2].ID}
		n, err := a.e.RequeueDeadLetters(a.Ctx, &backend.RequeueParams{Topic: topic, Group: group, IDs: requeued})
		require.NoError(t, err)
		require.Equal(t, 2, n)
		rest, _ := a.allFrom(backend.StateDead, p1.Next, 2)
		require.Equal(t, infoIDs(all[3:]), infoIDs(rest))
		require.Equal(t, backend.StateReady, a.show(requeued[0]).State)
	})
}

// A full Redis (maxmemory reached, noeviction) still lists, shows and deletes messages in
// every state: deleting frees memory.
func TestMessagesOnAFullRedis(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"list", "zset"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			server := redistest.Start(t, redistest.Options{Args: []string{"--maxmemory-policy", "noeviction"}})
			c := server.Client(t)
			a := adminEnvOn(t, name, c, redistest.Prefix(t))
			id := a.fourStates()
			require.NoError(t, c.ConfigSet(a.Ctx, "maxmemory", "1").Err())
			_, err := a.e.Publish(a.Ctx, &backend.PublishParams{Topic: topic, Messages: messages("x")})
			require.ErrorIs(t, err, backend.ErrRedisFull, "the Redis is full")

			for _, s := range backend.States {
				ms, _ := a.all(s, 3)
				require.Len(t, ms, 7, "%s", s)
			}
			for _, gone := range id.pick(2, 9, 16, 23) {
				require.NoError(t, a.remove(group, gone), gone)
				_, err := a.message(gone)
				require.ErrorIs(t, err, backend.ErrMessageNotFound, gone)
			}
		})
	}
}
