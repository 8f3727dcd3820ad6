package backendkit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
)

// RedisFull makes Redis's out-of-memory refusal ("OOM command not allowed when used memory >
// 'maxmemory'", the reply to a write that may add data once maxmemory is reached under
// noeviction) match backend.ErrRedisFull, keeping the reply in the message. Any other error is
// returned as it is.
func RedisFull(err error) error {
	var rerr redis.Error
	if err == nil || errors.Is(err, backend.ErrRedisFull) || !errors.As(err, &rerr) ||
		!strings.HasPrefix(rerr.Error(), "OOM ") {
		return err
	}
	return fmt.Errorf("%w: %w", backend.ErrRedisFull, err)
}
