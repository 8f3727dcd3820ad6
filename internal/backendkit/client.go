package backendkit

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadTimeout returns client's read timeout as go-redis normalised it (positive: a timeout;
// zero or negative: none), or 0 for a client type it cannot tell. A blocking command that
// go-redis does not type itself must end before it.
func ReadTimeout(client redis.UniversalClient) time.Duration {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ReadTimeout
	case *redis.ClusterClient:
		return c.Options().ReadTimeout
	}
	return 0
}
