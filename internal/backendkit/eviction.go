package backendkit

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
)

// ReadEviction reads maxmemory_policy and evicted_keys from INFO (the default sections hold
// both: one round trip, and the command relq's version check already sends). On a Cluster it
// asks every primary: the policy is the first one that drops queue keys, else any, and the
// evicted keys are summed. A server that refuses INFO (ACLs) leaves both unknown, without
// an error; a connection error is returned.
func ReadEviction(ctx context.Context, client redis.UniversalClient) (backend.Eviction, error) {
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		return readEviction(ctx, client)
	}
	var mu sync.Mutex
	all := backend.Eviction{EvictedKeys: -1}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		ev, err := readEviction(ctx, node)
		mu.Lock()
		defer mu.Unlock()
		if all.Policy == "" || !all.DropsQueueKeys() && ev.DropsQueueKeys() {
			all.Policy = ev.Policy
		}
		if ev.EvictedKeys >= 0 {
			all.EvictedKeys = max(all.EvictedKeys, 0) + ev.EvictedKeys
		}
		return err
	})
	return all, err
}

func readEviction(ctx context.Context, c redis.Cmdable) (backend.Eviction, error) {
	ev := backend.Eviction{EvictedKeys: -1}
	info, err := c.Info(ctx).Result()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr):
		return ev, nil
	case err != nil:
		return ev, err
	}
	ev.Policy, _ = infoValue(info, "maxmemory_policy")
	if v, ok := infoValue(info, "evicted_keys"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			ev.EvictedKeys = n
		}
	}
	return ev, nil
}
