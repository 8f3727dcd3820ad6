package streams

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// lanes is the env as an adaptertest.LaneRig: publish on a given lane and token, as the Redis
// client's resend runs it; the records are fields of the topic's meta HASH.
func (e *env) lanes() adaptertest.LaneRig {
	return adaptertest.LaneRig{
		Env: e.Env,
		PublishOn: func(ctx context.Context, p *backend.PublishParams, lane int, token string) ([]string, error) {
			res, err := e.b.publish(ctx, p, e.b.lanes.Field(lane), token)
			return res.IDs, err
		},
		Meta: func(topic string) string { return e.tk(topic).meta },
	}
}

// The Redis client resends a script whose reply it lost; the resend of a publish appends
// nothing twice and returns the same entry IDs.
func TestPublishResentOnItsLaneStoresOnce(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) { adaptertest.PublishResentOnItsLaneStoresOnce(t, e.lanes()) })
}

func TestConcurrentPublishesTakeTheirOwnLanes(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) { adaptertest.ConcurrentPublishesTakeTheirOwnLanes(t, e.lanes()) })
}

func TestIdleLaneRecordsAreSwept(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) { adaptertest.IdleLaneRecordsAreSwept(t, e.lanes()) })
}

// A thousand publishes leave the keys the first one left: no key per publish.
func TestPublishesLeaveNoKeyPerCall(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, e *env) { adaptertest.PublishesLeaveNoKeyPerCall(t, e.lanes(), 1000) })
}

// A batch's IDs follow each other, and the lane record keeps the first and the count; past a
// sequence of 2^52 (after an entry another program added with such an ID) the stream gives the
// batch IDs of its own, and the record keeps them all. Either way a resend gets them back.
func TestAResendGetsBackIDsThatDoNotFollowEachOther(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := func(topic string) *backend.PublishParams {
		return &backend.PublishParams{Topic: topic, Messages: []backend.OutMessage{
			{Envelope: adaptertest.Envelope("a")}, {Envelope: adaptertest.Envelope("b")}, {Envelope: adaptertest.Envelope("c")},
		}}
	}
	field := e.b.lanes.Field(0)
	resent := func(topic, token string) []string {
		t.Helper()
		first, err := e.b.publish(e.Ctx, p(topic), field, token)
		require.NoError(t, err)
		require.Len(t, first.IDs, 3)
		again, err := e.b.publish(e.Ctx, p(topic), field, token)
		require.NoError(t, err)
		require.Equal(t, first, again)
		return first.IDs
	}

	e.EnsureGroup("usual", "g")
	ids := resent("usual", "1")
	require.Regexp(t, `^1:`+ids[0]+`/3:\d+$`, e.Hash(e.tk("usual").meta)[field])
	require.Equal(t, int64(3), e.xlen(e.tk("usual").stream))

	e.EnsureGroup("t", "g")
	ahead := time.Now().Add(time.Hour).UnixMilli()
	require.NoError(t, e.C.XAdd(e.Ctx, &redis.XAddArgs{
		Stream: e.tk("t").stream, ID: fmt.Sprintf("%d-%d", ahead, int64(1)<<52-2), Values: []string{"foreign", "x"},
	}).Err())
	ids = resent("t", "2")
	require.Equal(t, fmt.Sprintf("%d-%d", ahead, int64(1)<<52-1), ids[0])
	require.Regexp(t, `^2:`+regexp.QuoteMeta(strings.Join(ids, ","))+`:\d+$`, e.Hash(e.tk("t").meta)[field])
	require.Equal(t, int64(4), e.xlen(e.tk("t").stream), "the foreign entry and the batch, once")
}
