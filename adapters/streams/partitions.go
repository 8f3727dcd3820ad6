package streams

import "github.com/relq/relq/internal/partition"

// init tells relq's partitioned topics how this backend names a topic's keys: {prefix:topic}
// in FormatNative, {topic} in FormatWatermill (see topicKeys); and how to queue a publish on a
// pipeline, and an ack.
func init() {
	partition.Register(func(x any) (partition.Config, bool) {
		b, ok := x.(*Backend)
		if !ok {
			return partition.Config{}, false
		}
		if b.opts.Format != FormatWatermill {
			c := partition.NativeConfig(b.client, b.opts.Prefix, 0)
			c.Queue, c.QueueAck = b.queuePublish, b.queueAck
			return c, true
		}
		return partition.Config{
			Client:   b.client,
			Tag:      func(topic string) string { return "{" + topic + "}" },
			InUse:    func(topic string) string { return b.topicKeys(topic).meta },
			Queue:    b.queuePublish,
			QueueAck: b.queueAck,
		}, true
	})
}
