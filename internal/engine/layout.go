package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
)

// LayoutError reports a topic whose keys are laid out by a relq version this one cannot read.
// It matches backend.ErrStorageLayout with errors.Is.
type LayoutError struct {
	Backend string
	Found   int
	Want    int
}

// Error names both layouts and the upgrade step.
func (e *LayoutError) Error() string {
	return fmt.Sprintf("relq %s: found storage layout %d in Redis, this relq reads layout %d: "+
		"drain and delete the topic's keys with the relq version that wrote them (see docs/operations.md, Upgrading), "+
		"or run the version that writes layout %d", e.Backend, e.Found, e.Want, e.Found)
}

// Is makes errors.Is(err, backend.ErrStorageLayout) true.
func (e *LayoutError) Is(target error) bool { return target == backend.ErrStorageLayout }

// layoutError turns the scripts' "RELQLAYOUT found want" error reply into a *LayoutError.
func (e *Engine) layoutError(err error) error {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		return nil
	}
	rest, ok := strings.CutPrefix(rerr.Error(), "RELQLAYOUT ")
	if !ok {
		return nil
	}
	found, _ := strconv.Atoi(strings.Fields(rest)[0])
	return &LayoutError{Backend: e.store.Name, Found: found, Want: Layout}
}

// replyError turns the scripts' RELQGONE, RELQLOST and RELQDURABLE error replies into errors
// matching backend.ErrGroupDeleted, backend.ErrGroupLost and backend.ErrNotEphemeral; nil for
// any other error.
func (e *Engine) replyError(err error) error {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		return nil
	}
	switch {
	case strings.HasPrefix(rerr.Error(), "RELQGONE "):
		return fmt.Errorf("%s: %w", e.store.Name, backend.ErrGroupDeleted)
	case strings.HasPrefix(rerr.Error(), "RELQLOST "):
		return fmt.Errorf("%s: %w", e.store.Name, backend.ErrGroupLost)
	case strings.HasPrefix(rerr.Error(), "RELQDURABLE "):
		return fmt.Errorf("%s: %w", e.store.Name, backend.ErrNotEphemeral)
	}
	return nil
}
