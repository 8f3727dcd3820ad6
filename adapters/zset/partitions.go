package zset

import "github.com/relq/relq/internal/partition"

// init tells relq's partitioned topics how this backend names a topic's keys ({prefix:topic}),
// and how to queue a publish and an ack on a pipeline.
func init() {
	partition.Register(func(x any) (partition.Config, bool) {
		b, ok := x.(*Backend)
		if !ok {
			return partition.Config{}, false
		}
		c := partition.NativeConfig(b.e.Client(), b.e.Prefix(), 0)
		c.Queue, c.QueueAck = b.e.QueuePublish, b.e.QueueAck
		return c, true
	})
}
