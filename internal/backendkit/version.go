package backendkit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/pubsub"
)

// VersionGate checks once that Redis is at least 6.2, the oldest version every adapter's
// commands and scripts run on. The zero value is ready to use; it must not be copied.
type VersionGate struct {
	ok  atomic.Bool
	mu  sync.Mutex
	err error
}

// Check runs the check on its first call and returns its outcome from then on. A connection
// error is returned and the check runs again next time; a server that refuses INFO (ACLs,
// proxies) is assumed recent enough, and scripts then fail loudly if it is not. A server too
// old gets an error wrapping pubsub.ErrRedisVersion, every time.
func (g *VersionGate) Check(ctx context.Context, client redis.UniversalClient) error {
	if g.ok.Load() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ok.Load() {
		return nil
	}
	if g.err != nil {
		return g.err
	}
	info, err := client.Info(ctx, "server").Result()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr):
		g.ok.Store(true)
		return nil
	case err != nil:
		return err
	}
	major, minor, ok := ParseVersion(info)
	if ok && (major < 6 || major == 6 && minor < 2) {
		g.err = fmt.Errorf("%w: server is %d.%d, relq needs 6.2 or later", pubsub.ErrRedisVersion, major, minor)
		return g.err
	}
	g.ok.Store(true)
	return nil
}

// Passed reports whether a check has passed, so later ones need no round trip.
func (g *VersionGate) Passed() bool { return g.ok.Load() }

// ParseVersion reads major and minor from INFO server's redis_version line.
func ParseVersion(info string) (major, minor int, ok bool) {
	for line := range strings.Lines(info) {
		v, found := strings.CutPrefix(strings.TrimSpace(line), "redis_version:")
		if !found {
			continue
		}
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return 0, 0, false
		}
		var err1, err2 error
		major, err1 = strconv.Atoi(parts[0])
		minor, err2 = strconv.Atoi(parts[1])
		return major, minor, err1 == nil && err2 == nil
	}
	return 0, 0, false
}
