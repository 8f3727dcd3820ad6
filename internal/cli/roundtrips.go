package cli

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// roundTrips is a go-redis hook that records the commands sent while it is on, so the demo
// can show how many round trips a call made rather than claim it.
type roundTrips struct {
	mu   sync.Mutex
	on   bool
	cmds []string
}

func (r *roundTrips) start() {
	r.mu.Lock()
	r.on, r.cmds = true, nil
	r.mu.Unlock()
}

// stop turns recording off and returns one entry per round trip ("evalsha", or
// "evalsha NOSCRIPT" when Redis did not have the script yet).
func (r *roundTrips) stop() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.cmds
}

func (r *roundTrips) record(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		name += " NOSCRIPT"
	}
	r.cmds = append(r.cmds, name)
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.record(cmd.Name(), err)
		return err
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		r.record("pipeline["+strings.Join(names, " ")+"]", err)
		return err
	}
}
