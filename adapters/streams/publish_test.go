package streams

import (
	"strings"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

func TestPublishAppendsABatchWithOneTimeToTheBacklogOfATopicWithoutGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.Publish("t", "a", "b", "c")
	ms, _, _ := strings.Cut(ids[0], "-")
	for i, id := range ids[1:] {
		gotMs, _, _ := strings.Cut(id, "-")
		require.Equal(t, ms, gotMs, "the batch shares one publish time")
		require.True(t, idLess(ids[i], id), "IDs increase: %v", ids)
	}

	entries, err := e.C.XRange(e.Ctx, e.tk("t").stream, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 3)
	for i, en := range entries {
		require.Equal(t, ids[i], en.ID)
		require.Len(t, en.Values, 1, "one field: the envelope")
		env, err := backend.DecodeEnvelope([]byte(en.Values[FieldEnvelope].(string)))
		require.NoError(t, err)
		require.Equal(t, adaptertest.Envelope([]string{"a", "b", "c"}[i]), env)
	}

	// No group existed, and a publish registers none: the entries are the backlog.
	require.Empty(t, groupsOf(t, e, "t"))
	require.Equal(t, []string{"meta", "published", "stream"}, e.Keys("t"), "meta holds the publish lane's record")
	require.Equal(t, backend.TopicInfo{Name: "t", Groups: []string{}, Backlog: 3}, e.topicInfo("t"))
}

func TestNewGroupStartsWithTheNextPublishOrReplaysFromTheOldest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.EnsureGroup("t", "first")
	old := e.Publish("t", "old")
	e.EnsureGroup("t", "new")
	e.EnsureGroupFromOldest("t", "replay")
	e.EnsureGroup("t", "replay") // existing: left as it is
	fresh := e.Publish("t", "fresh")

	require.Equal(t, fresh, adaptertest.IDs(e.Claim("t", "new", "c", 10)))
	require.Equal(t, append(old, fresh...), adaptertest.IDs(e.Claim("t", "replay", "c", 10)))
	require.Equal(t, int64(1), e.Stats("t", "new").Counters.Published)
	require.Equal(t, int64(2), e.Stats("t", "replay").Counters.Published, "the replayed entry was routed to the group")

	require.Equal(t, []string{"first", "new", "replay"}, groupsOf(t, e, "t"))
	require.Empty(t, groupsOf(t, e, "nothing-here"))
}

func TestPublishTrimsToMaxLenApproximately(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.MaxLen = 150 })
	for range 10 {
		e.Publish("t", strings.Split(strings.Repeat("x,", 100), ",")[:100]...)
	}
	// XTRIM MAXLEN ~ removes whole nodes (100 entries each by default).
	n := e.xlen(e.tk("t").stream)
	require.GreaterOrEqual(t, n, int64(150))
	require.Less(t, n, int64(150+100))
}

func TestPublishTrimsEntriesOlderThanMaxAge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.MaxAge = 50 * time.Millisecond })
	e.Publish("t", strings.Split(strings.Repeat("x,", 300), ",")[:300]...)
	time.Sleep(100 * time.Millisecond)
	ids := e.Publish("t", "new")
	entries, err := e.C.XRange(e.Ctx, e.tk("t").stream, "-", "+").Result()
	require.NoError(t, err)
	// Approximate: whole nodes of old entries go, the node with the new entry stays.
	require.Less(t, len(entries), 301)
	require.Equal(t, ids[0], entries[len(entries)-1].ID)
}

func TestWatermillFormatUsesTheBareTopicAndItsFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t, watermillFormat)
	topic := "orders:" + e.Prefix // topics may hold ':'
	msgs := []backend.OutMessage{
		{Envelope: backend.Envelope{UUID: "u1", Metadata: map[string]string{"a": "1"}, Payload: []byte("p1")}},
		{Envelope: backend.Envelope{UUID: "u2", Payload: []byte("p2")}},
	}
	res, err := e.b.Publish(e.Ctx, &backend.PublishParams{Topic: topic, Messages: msgs})
	published := res.IDs
	require.NoError(t, err)
	e.EnsureGroup(topic, backend.DefaultGroup) // the first group: it takes the backlog

	k := e.gk(topic, backend.DefaultGroup)
	require.Equal(t, topic, k.topic.stream)
	require.Equal(t, "{"+topic+"}:"+e.Prefix+":g:default:retry", k.retry, "relq's keys hash to the stream's slot")
	entries, err := e.C.XRange(e.Ctx, topic, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, map[string]any{FieldWatermillUUID: "u1", FieldMetadata: string(encodeMetadata(map[string]string{"a": "1"})), FieldPayload: "p1"}, entries[0].Values)
	require.Equal(t, map[string]any{FieldWatermillUUID: "u2", FieldMetadata: "", FieldPayload: "p2"}, entries[1].Values)

	ds := e.Claim(topic, backend.DefaultGroup, "c", 10)
	require.Equal(t, published, adaptertest.IDs(ds))
	require.Equal(t, msgs[0].Envelope, ds[0].Envelope)
	require.Equal(t, msgs[1].Envelope, ds[1].Envelope)
}

// idLess orders entry IDs numerically.
func idLess(a, b string) bool {
	pa, pb := strings.Split(padID(a), "-"), strings.Split(padID(b), "-")
	return pa[0] < pb[0] || pa[0] == pb[0] && pa[1] < pb[1]
}

func padID(id string) string {
	ms, seq, _ := strings.Cut(id, "-")
	pad := func(s string) string { return strings.Repeat("0", 20-len(s)) + s }
	return pad(ms) + "-" + pad(seq)
}
