package benchmarks

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// sentCounter is a go-redis hook counting the commands its clients send (each command of a
// pipeline counts), so the idle figure can say what a subscriber sends as well as what Redis
// runs for it (which includes the commands inside scripts); and those that got their reply,
// so a measurement can wait for the baseline's acks to land.
type sentCounter struct {
	n      atomic.Int64
	mu     sync.Mutex
	byName map[string]int64
	// doneByName counts the commands that got a reply (or failed), by name.
	doneByName map[string]int64
}

func (s *sentCounter) done(cmds ...redis.Cmder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.doneByName == nil {
		s.doneByName = map[string]int64{}
	}
	for _, c := range cmds {
		s.doneByName[c.Name()]++
	}
}

// completed returns how many name commands got their reply.
func (s *sentCounter) completed(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.doneByName[name]
}

func (s *sentCounter) add(cmds ...redis.Cmder) {
	s.n.Add(int64(len(cmds)))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName == nil {
		s.byName = map[string]int64{}
	}
	for _, c := range cmds {
		s.byName[c.Name()]++
	}
}

// snapshot returns the counts by command name.
func (s *sentCounter) snapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int64, len(s.byName))
	for k, v := range s.byName {
		m[k] = v
	}
	return m
}

var _ redis.Hook = (*sentCounter)(nil)

func (s *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.add(cmd)
		defer s.done(cmd)
		return next(ctx, cmd)
	}
}

func (s *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		s.add(cmds...)
		defer s.done(cmds...)
		return next(ctx, cmds)
	}
}
