package streams

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/seal"
)

// inner is what the backend opens to relq's own tests through internal/seal: fault injection
// (states that only failures produce, so the conformance suite can check the recovery paths
// against real Redis) and hooks on the blocking claims' connections. No production code
// reaches it.
type inner struct{ b *Backend }

func init() {
	seal.Register(func(x any) (seal.Inner, bool) {
		b, ok := x.(*Backend)
		return inner{b}, ok
	})
}

// InjectCorrupt appends an entry holding data where the message should be, bypassing the
// codec, as a foreign writer would (one inject.lua call, which creates the group first if
// missing): FieldEnvelope in FormatNative, FieldMetadata without a UUID in FormatWatermill.
// Claiming it yields a Delivery whose Err wraps backend.ErrCorruptEntry, and its dead letter
// keeps data as Raw.
func (f inner) InjectCorrupt(ctx context.Context, topic, group string, data []byte) error {
	if err := f.b.check(ctx, "topic", topic, "group", group); err != nil {
		return err
	}
	field := FieldEnvelope
	if f.b.opts.Format == FormatWatermill {
		field = FieldMetadata
	}
	k := f.b.groupKeys(topic, group)
	return injectScript.Run(ctx, f.b.client, k.injectKeys(), group, field, data).Err()
}

// InjectOrphan cannot make a streams orphan: XREADGROUP adds an entry to the PEL together
// with its consumer, so a delivery is never pending without a holder
// (Capabilities.PendingOrphans is false). It returns an error wrapping
// backend.ErrNotImplemented.
func (f inner) InjectOrphan(context.Context, string, string) (string, error) {
	return "", fmt.Errorf("%w: streams deliveries cannot be pending without a holder", backend.ErrNotImplemented)
}

// DeleteBody deletes the entry id from the topic's stream (XDEL), as a hand edit or
// trimming would; a group still holding it dead-letters it with the reason "body missing"
// when it is due again.
func (f inner) DeleteBody(ctx context.Context, topic, id string) error {
	if err := f.b.check(ctx, "topic", topic); err != nil {
		return err
	}
	return f.b.client.XDel(ctx, f.b.groupKeys(topic, backend.DefaultGroup).topic.stream, id).Err()
}

// AddWaitHook adds hook to the connections of blocking claims, which are not the client's.
func (f inner) AddWaitHook(hook redis.Hook) { f.b.waits.AddHook(hook) }
