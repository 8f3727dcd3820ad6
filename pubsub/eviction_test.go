package pubsub_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// A Subscriber logs an eviction policy that can delete queue keys at error level, once
// however many topics it subscribes to; a safe policy, or one it may not read (INFO refused
// by ACLs), logs no error and does not keep it from subscribing.
func TestSubscriberWarnsOfEviction(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{})
	admin := server.Client(t)
	ctx := context.Background()
	subscribe := func(t *testing.T, c redis.UniversalClient, topics ...string) []watermill.CapturedMessage {
		t.Helper()
		b, err := list.New(c, list.Options{Prefix: redistest.Prefix(t)})
		require.NoError(t, err)
		logger := watermill.NewCaptureLogger()
		sub, err := pubsub.NewSubscriber(b, pubsub.SubscriberConfig{}, logger)
		require.NoError(t, err)
		for _, topic := range topics {
			_, err := sub.Subscribe(ctx, topic)
			require.NoError(t, err)
		}
		require.NoError(t, sub.Close()) // its goroutines log no more: the capture can be read
		var warnings []watermill.CapturedMessage
		for _, m := range logger.Captured()[watermill.ErrorLogLevel] {
			if strings.Contains(m.Msg, "evict") {
				warnings = append(warnings, m)
			}
		}
		return warnings
	}

	// The default policy, noeviction, is safe: Redis refuses writes when full instead.
	require.Empty(t, subscribe(t, admin, "a"))

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	errs := subscribe(t, admin, "a", "b")
	require.Len(t, errs, 1, "one error per Subscriber, not per Subscribe")
	require.Equal(t, "allkeys-lru", errs[0].Fields["maxmemory_policy"])
	require.ErrorContains(t, errs[0].Err, "maxmemory-policy is allkeys-lru")
	require.ErrorContains(t, errs[0].Err, "set maxmemory-policy noeviction")

	// volatile-* evicts only keys with a TTL, which relq gives to no key holding a message.
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
	require.Empty(t, subscribe(t, admin, "a"))

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu").Err())
	user := redistest.User{Name: "noinfo", Password: "secret", Rules: []string{"~*", "+@all", "-info"}}
	server.AddUser(t, user)
	require.Empty(t, subscribe(t, server.ClientAs(t, user), "a"), "policy unknown: nothing to report")
}
