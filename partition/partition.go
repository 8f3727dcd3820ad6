// Package partition creates partitioned topics: one topic spread over P partitions, each an
// ordinary topic of the backend with a hash tag of its own, so that a topic can grow past one
// Redis primary. Messages of one key (pubsub.SetKey, PublisherConfig.Key) go to one partition,
// in publish order; the subscriptions of a group share the partitions among themselves.
//
// A topic's count is fixed when it is created (Create, or `relq topic create TOPIC
// --partitions P`) and recorded in Redis beside the topic's keys, so every process agrees:
// pubsub's Publisher and Subscriber read it at a topic's first use and serve the topic over
// its partitions, with nothing to configure. A topic never created with partitions keeps its
// keys exactly as before. See docs/partitions.md.
package partition

import (
	"context"
	"fmt"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/partition"
)

// Max is the most partitions a topic can have.
const Max = partition.MaxCount

// ErrCountMismatch is matched by a *CountError.
var ErrCountMismatch = partition.ErrCountMismatch

// CountError reports a topic that already has another partition count than the one asked
// for, or that is in use without partitions (Recorded 1). Nothing was written.
type CountError = partition.CountError

// Create records that topic has p partitions (1 to Max) on be, a backend of relq's adapters
// (list, zset or streams). Create it before anything publishes to it or subscribes to it: a
// topic already in use without partitions cannot be split, and one created with another count
// is refused with a *CountError. Creating a topic again with its own count does nothing; so
// does p = 1, which is every topic's count until it is created with more.
func Create(ctx context.Context, be backend.Backend, topic string, p int) error {
	cfg, err := configOf(be)
	if err != nil {
		return err
	}
	if _, err := partition.New(topic, p, cfg.Tag); err != nil {
		return err
	}
	k := partition.Keys{Record: partition.RecordKey(cfg.Tag(topic)), InUse: cfg.InUse(topic)}
	_, err = partition.Ensure(ctx, cfg.Client, topic, p, k)
	return err
}

// Count returns topic's partition count: the one it was created with, 1 for a topic created
// without partitions or not at all.
func Count(ctx context.Context, be backend.Backend, topic string) (int, error) {
	cfg, err := configOf(be)
	if err != nil {
		return 0, err
	}
	if err := backend.ValidateName("topic", topic); err != nil {
		return 0, err
	}
	return partition.Recorded(ctx, cfg.Client, topic, partition.RecordKey(cfg.Tag(topic)))
}

// Open returns be seen through partitioned topics, as pubsub's Publisher and Subscriber see
// it: every call on a partitioned topic reaches its partitions (a delivery ID of one is
// "<partition>:<ID>"), lists and counts add them up, and the topic's partitions are no topics
// of their own. Calls on any other topic go to be as they are. The result implements the
// backend interfaces be does (backend.Admin, TopicLister, ...). A backend of no relq adapter
// is returned as it is.
func Open(be backend.Backend) backend.Backend { return partition.Auto(be) }

func configOf(be backend.Backend) (partition.Config, error) {
	cfg, ok := partition.ConfigOf(partition.Inner(be))
	if !ok {
		return partition.Config{}, fmt.Errorf("%w: the %s backend is none of relq's adapters, which alone have partitioned topics", backend.ErrNotImplemented, be.Name())
	}
	return cfg, nil
}
