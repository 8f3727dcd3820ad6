package adaptertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/conformance"
	"github.com/relq/relq/internal/keys"
	"github.com/relq/relq/internal/partition"
	"github.com/relq/relq/internal/redistest"
)

// Partitioned is the conformance.Factory of build with every topic laid out over p
// partitions of the adapter's native keys ({prefix:topic} tags): the Harness's Backend and
// Peer are partition.Backend wrappers of what build makes, its Keys those of the topic's own
// tag and of every partition's, and its Faults build's, aimed at a partition.
func Partitioned(build Build, p int) conformance.Factory {
	return partitioned(build, p, func(t *testing.T, opts conformance.Options) (func() redis.UniversalClient, func(time.Duration) error) {
		server := redistest.Shared(t)
		if opts.Private {
			server = redistest.Start(t, redistest.Options{AOF: true})
			return func() redis.UniversalClient { return server.Client(t) }, server.Outage
		}
		return func() redis.UniversalClient { return server.Client(t) }, nil
	})
}

// PartitionedOnCluster is Partitioned on cluster, whose primaries the partitions of every
// topic spread over. The cases that stop Redis skip: the Harness has no Outage.
func PartitionedOnCluster(build Build, p int, cluster *redistest.Cluster) conformance.Factory {
	return partitioned(build, p, func(t *testing.T, _ conformance.Options) (func() redis.UniversalClient, func(time.Duration) error) {
		return func() redis.UniversalClient { return cluster.Client(t) }, nil
	})
}

// servers gives a test its clients (each call a new one, as another process's) and, when it
// asked for a private server, the outage of that server.
type servers func(t *testing.T, opts conformance.Options) (client func() redis.UniversalClient, outage func(time.Duration) error)

func partitioned(build Build, p int, on servers) conformance.Factory {
	return func(t *testing.T, opts conformance.Options) conformance.Harness {
		newClient, outage := on(t, opts)
		prefix := redistest.Prefix(t)
		tag := func(topic string) string { return keys.Tag(prefix, topic) }
		// wrap builds the adapter's Harness on client and wraps its Backend.
		wrap := func(client redis.UniversalClient) (backend.Backend, conformance.Harness) {
			h, err := build(client, prefix, opts)
			require.NoError(t, err)
			closeBackend(t, h.Backend)
			b, err := partition.Wrap(h.Backend, partition.NativeConfig(client, prefix, p))
			require.NoError(t, err)
			return b, h
		}
		client := newClient()
		b, inner := wrap(client)
		h := conformance.Harness{Backend: b, Complete: true}
		layout := func(topic string) *partition.Layout {
			l, err := partition.New(topic, p, tag)
			require.NoError(t, err)
			return l
		}
		if inner.Faults != nil {
			h.Faults = partitionFaults{inner.Faults, layout}
			if del, ok := inner.Faults.(conformance.BodyDeleter); ok {
				h.Faults = partitionBodyFaults{partitionFaults{inner.Faults, layout}, del}
			}
		}
		h.Outage = outage
		h.Keys = func(topic string) ([]string, error) {
			l := layout(topic)
			all, err := TopicKeys(client, tag, nil)(topic)
			var out []string
			for _, k := range all {
				if k != partition.RecordKey(tag(topic)) { // the topic's configuration: see Harness.Keys
					out = append(out, k)
				}
			}
			for i := range l.Count() {
				if err != nil {
					return nil, err
				}
				var ks []string
				ks, err = TopicKeys(client, tag, nil)(l.Name(i))
				out = append(out, ks...)
			}
			return out, err
		}
		// Redis forgetting a topic forgets its partition record too.
		h.Forget = ForgetByTag(client, func(topic string) ([]string, error) {
			ks, err := h.Keys(topic)
			return append(ks, partition.RecordKey(tag(topic))), err
		})
		h.Peer = func() (backend.Backend, error) {
			peer, _ := wrap(newClient())
			return peer, nil
		}
		return h
	}
}

// partitionFaults injects failure states into the partitions of a topic.
type partitionFaults struct {
	inner  conformance.Faults
	layout func(topic string) *partition.Layout
}

// InjectCorrupt stores data in partition 0.
func (f partitionFaults) InjectCorrupt(ctx context.Context, topic, group string, data []byte) error {
	return f.inner.InjectCorrupt(ctx, f.layout(topic).Name(0), group, data)
}

// InjectOrphan orphans the next ready message of the first partition that has one.
func (f partitionFaults) InjectOrphan(ctx context.Context, topic, group string) (string, error) {
	l := f.layout(topic)
	for i := range l.Count() {
		id, err := f.inner.InjectOrphan(ctx, l.Name(i), group)
		if err != nil || id != "" {
			return partition.OuterID(i, id), err
		}
	}
	return "", nil
}

// partitionBodyFaults adds body deletion where the backend beneath has it.
type partitionBodyFaults struct {
	partitionFaults
	del conformance.BodyDeleter
}

// DeleteBody deletes the body of a delivery in its partition.
func (f partitionBodyFaults) DeleteBody(ctx context.Context, topic, id string) error {
	l := f.layout(topic)
	i, inner, ok := partition.SplitID(id, l.Count())
	if !ok {
		return fmt.Errorf("adaptertest: %q names no partition of %q", id, topic)
	}
	return f.del.DeleteBody(ctx, l.Name(i), inner)
}
