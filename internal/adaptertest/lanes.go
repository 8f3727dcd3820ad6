package adaptertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/stretchr/testify/require"
)

// LaneRig is a backend whose Publish runs on publish lanes (backendkit.Lanes), for the lane
// checks below: the Env of the backend, its publish on a given lane and token (as a resend
// by the Redis client runs it), and the key of a topic's meta HASH, which holds the records.
type LaneRig struct {
	*Env
	PublishOn func(ctx context.Context, p *backend.PublishParams, lane int, token string) ([]string, error)
	Meta      func(topic string) string
}

// topic names a topic of the test's own: the test's prefix and name, since a backend may keep
// a topic's data under its bare name (streams' FormatWatermill), which no prefix sets apart.
func (r LaneRig) topic(name string) string { return r.Prefix + "-" + name }

// LaneRecords returns the lane records in topic's meta: field -> "token:...:ms".
func (r LaneRig) LaneRecords(topic string) map[string]string {
	r.T.Helper()
	out := map[string]string{}
	for f, v := range r.Hash(r.Meta(topic)) {
		if strings.HasPrefix(f, "p:") {
			out[f] = v
		}
	}
	return out
}

// PublishResentOnItsLaneStoresOnce checks that a resent publish (same lane, same token), as
// the Redis client sends it after a lost reply, stores nothing twice and returns the same IDs,
// while the lane's next call and another lane's call store anew; and that the records are one
// per lane in the topic's meta, which has no expiry while the topic has a durable group. It
// returns the IDs of the first call, of the lane's next and of another lane's, two each, for
// a backend's own checks of its IDs.
func PublishResentOnItsLaneStoresOnce(t *testing.T, r LaneRig) (first, next, other []string) {
	t.Helper()
	orders := r.topic("orders")
	r.EnsureGroup(orders, "g")
	p := &backend.PublishParams{Topic: orders, Messages: []backend.OutMessage{
		{Envelope: Envelope("a")}, {Envelope: Envelope("b")},
	}}
	on := func(lane int, token string) []string {
		t.Helper()
		ids, err := r.PublishOn(r.Ctx, p, lane, token)
		require.NoError(t, err)
		require.Len(t, ids, 2)
		return ids
	}
	first = on(0, "7")
	require.Equal(t, first, on(0, "7"), "a resend gets the same IDs")
	st := r.Stats(orders, "g")
	require.EqualValues(t, 2, st.Ready)
	require.EqualValues(t, 2, st.Counters.Published)

	next = on(0, "8")
	other = on(1, "7")
	all := map[string]bool{}
	for _, id := range append(append(append([]string{}, first...), next...), other...) {
		all[id] = true
	}
	require.Len(t, all, 6, "the lane's next call, and another lane's, store anew")
	st = r.Stats(orders, "g")
	require.EqualValues(t, 6, st.Ready)
	require.EqualValues(t, 6, st.Counters.Published)

	require.Len(t, r.LaneRecords(orders), 2, "one record per lane")
	ttl, err := r.C.PTTL(r.Ctx, r.Meta(orders)).Result()
	require.NoError(t, err)
	require.Equal(t, time.Duration(-1), ttl, "meta exists and never expires")
	return first, next, other
}

// ConcurrentPublishesTakeTheirOwnLanes checks that concurrent Publish calls of one backend
// never share a lane: were two calls on one lane with one token, the second would be taken
// for a resend of the first and store nothing.
func ConcurrentPublishesTakeTheirOwnLanes(t *testing.T, r LaneRig) {
	t.Helper()
	topic := r.topic("t")
	r.EnsureGroup(topic, "g")
	const calls = 50
	type reply struct {
		ids []string
		err error
	}
	replies := make(chan reply, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			res, err := r.B.Publish(r.Ctx, &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{
				{Envelope: Envelope(fmt.Sprint(i))},
			}})
			replies <- reply{res.IDs, err}
		})
	}
	wg.Wait()
	close(replies)
	ids := map[string]bool{}
	for rep := range replies {
		require.NoError(t, rep.err)
		require.Len(t, rep.ids, 1)
		ids[rep.ids[0]] = true
	}
	require.Len(t, ids, calls, "every call got IDs of its own")
	require.EqualValues(t, calls, r.Stats(topic, "g").Ready)
	lanes := len(r.LaneRecords(topic))
	require.True(t, lanes >= 1 && lanes <= calls, "%d lane records for %d calls", lanes, calls)
}

// IdleLaneRecordsAreSwept checks that a lane's first call (token "1") deletes the records
// that a process which died left in meta once they are idle for an hour, and keeps the others.
func IdleLaneRecordsAreSwept(t *testing.T, r LaneRig) {
	t.Helper()
	topic := r.topic("t")
	r.Publish(topic, "x")
	now := time.Now().UnixMilli()
	hour := time.Hour.Milliseconds()
	require.NoError(t, r.C.HSet(r.Ctx, r.Meta(topic),
		"p:dead:0", fmt.Sprintf("5:9:%d", now-2*hour), "p:live:0", fmt.Sprintf("5:9:%d", now)).Err())

	_, err := r.PublishOn(r.Ctx, &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{{Envelope: Envelope("y")}}}, 7, "1")
	require.NoError(t, err)
	records := r.LaneRecords(topic)
	require.NotContains(t, records, "p:dead:0", "idle for two hours: swept")
	require.Contains(t, records, "p:live:0")
}

// PublishesLeaveNoKeyPerCall checks that calls single-message Publish calls, one after the
// other, leave the keys that the first left and one lane record, on a topic with a group and
// on one without (its backlog).
func PublishesLeaveNoKeyPerCall(t *testing.T, r LaneRig, calls int) {
	t.Helper()
	grouped := r.topic("grouped")
	r.EnsureGroup(grouped, "g")
	for _, topic := range []string{grouped, r.topic("backlog")} {
		r.Publish(topic, "first")
		keys := r.Keys(topic)
		for i := 1; i < calls; i++ {
			r.Publish(topic, fmt.Sprint(i))
		}
		require.Equal(t, keys, r.Keys(topic), "topic %s: %d publishes, no key per publish", topic, calls)
		require.Len(t, r.LaneRecords(topic), 1, "topic %s: one call at a time, one lane", topic)
	}
	require.EqualValues(t, calls, r.Stats(grouped, "g").Ready)
}
