package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MoveSlot moves one hash slot from the primary at from to the primary at to while clients
// keep using it, as `redis-cli --cluster reshard` does: the target imports, the source
// migrates, the keys move one MIGRATE at a time (each call one key, so that clients meet
// the slot half moved: ASK redirects and TRYAGAIN), then every primary learns the new owner.
// It returns how many keys moved.
func (c *Cluster) MoveSlot(ctx context.Context, slot int, from, to *Server) (int, error) {
	src := redis.NewClient(&redis.Options{Addr: from.Addr(), MaxRetries: -1})
	defer src.Close()
	dst := redis.NewClient(&redis.Options{Addr: to.Addr(), MaxRetries: -1})
	defer dst.Close()
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return 0, fmt.Errorf("redistest: source id: %w", err)
	}
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return 0, fmt.Errorf("redistest: target id: %w", err)
	}
	s := strconv.Itoa(slot)
	if err := dst.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID).Err(); err != nil {
		return 0, fmt.Errorf("redistest: importing: %w", err)
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", dstID).Err(); err != nil {
		return 0, fmt.Errorf("redistest: migrating: %w", err)
	}
	host, port, _ := strings.Cut(to.Addr(), ":")
	moved := 0
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 1).Result()
		if err != nil {
			return moved, fmt.Errorf("redistest: keys in slot %d: %w", slot, err)
		}
		if len(keys) == 0 {
			break
		}
		if err := src.Migrate(ctx, host, port, keys[0], 0, 5*time.Second).Err(); err != nil {
			return moved, fmt.Errorf("redistest: migrate %s: %w", keys[0], err)
		}
		moved++
	}
	// The target first, then the source, then the others, as redis-cli does: the source stops
	// answering for the slot only once the target owns it.
	for _, n := range []*redis.Client{dst, src} {
		if err := n.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", dstID).Err(); err != nil {
			return moved, fmt.Errorf("redistest: setslot node: %w", err)
		}
	}
	for _, n := range c.Nodes {
		if n == from || n == to || !n.Running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		role, err := cl.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			err = cl.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", dstID).Err()
		}
		_ = cl.Close()
		if err != nil {
			return moved, fmt.Errorf("redistest: setslot node on %s: %w", n.Addr(), err)
		}
	}
	return moved, nil
}
