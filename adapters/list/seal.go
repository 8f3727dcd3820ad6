package list

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/engine"
	"github.com/relq/relq/internal/seal"
)

// inner is what the backend opens to relq's own tests through internal/seal: fault injection
// (states that only failures produce, so the conformance suite can check the recovery paths
// against real Redis) and hooks on the blocking claims' connections. No production code
// reaches it.
type inner struct {
	engine.Sealed
	b *Backend
}

func init() {
	seal.Register(func(x any) (seal.Inner, bool) {
		b, ok := x.(*Backend)
		if !ok {
			return nil, false
		}
		return inner{engine.Sealed{E: b.e}, b}, true
	})
}

// InjectOrphan moves the next ready entry of group to processing with one LMOVE and no lease, as
// a consumer that died between BLMOVE and lease registration leaves it. It returns the id, or
// "" when nothing is ready.
func (f inner) InjectOrphan(ctx context.Context, topic, group string) (string, error) {
	if err := f.b.e.Check(ctx, "topic", topic, "group", group); err != nil {
		return "", err
	}
	k := f.b.keys(topic, group)
	entry, err := f.b.e.Client().LMove(ctx, k.Store("ready"), k.Store("processing"), "RIGHT", "LEFT").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	id, _, _ := strings.Cut(entry, "@") // BLMOVE leaves the ready entry "id@ms" as it is
	return id, err
}
