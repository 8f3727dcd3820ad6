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
	"github.com/relq/relq/backend"
)

// VersionGate checks once that Redis is at least 6.2, the oldest version every adapter's
// commands and scripts run on. The zero value is ready to use; it must not be copied.
//
// One INFO is in flight at a time, and callers that arrive meanwhile wait for its outcome
// only as long as their own context allows: a slow dial does not hold them.
type VersionGate struct {
	ok     atomic.Bool
	mu     sync.Mutex
	err    error          // the server is too old: final
	flight *versionFlight // the check in progress, or nil
}

// versionFlight is one check in progress. Once done is closed, err is its outcome, and
// abandoned says the caller that ran it gave up (its context ended), which tells nothing
// about the server.
type versionFlight struct {
	done      chan struct{}
	err       error
	abandoned bool
}

// Check runs the check until one passes and returns nil from then on. A connection error or
// a reply that says the server cannot answer now (LOADING, BUSY, MASTERDOWN, ...) is
// returned, and the next call checks again. A server that refuses INFO (an ACL without it,
// a proxy that does not forward it) is assumed recent enough, and scripts then fail loudly
// if it is not. A server too old gets an error wrapping backend.ErrRedisVersion, every time.
func (g *VersionGate) Check(ctx context.Context, client redis.UniversalClient) error {
	for {
		if g.ok.Load() {
			return nil
		}
		g.mu.Lock()
		if g.ok.Load() || g.err != nil {
			err := g.err
			g.mu.Unlock()
			return err
		}
		f := g.flight
		if f == nil {
			f = &versionFlight{done: make(chan struct{})}
			g.flight = f
			g.mu.Unlock()
			g.run(ctx, client, f)
			return f.err
		}
		g.mu.Unlock()
		select {
		case <-f.done:
			if !f.abandoned {
				return f.err
			}
			// Its caller gave up before Redis answered: check again.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// run asks the server for its version, records the verdict and ends the flight f.
func (g *VersionGate) run(ctx context.Context, client redis.UniversalClient, f *versionFlight) {
	info, err := client.Info(ctx, "server").Result()
	passed, final := false, false
	switch {
	case err == nil:
		major, minor, ok := ParseVersion(info)
		if ok && (major < 6 || major == 6 && minor < 2) {
			err = fmt.Errorf("%w: server is %d.%d, relq needs 6.2 or later", backend.ErrRedisVersion, major, minor)
			final = true
		} else {
			passed = true
		}
	case infoRefused(err):
		err, passed = nil, true
	case ctx.Err() != nil:
		f.abandoned = true
	}
	f.err = err
	g.mu.Lock()
	if passed {
		g.ok.Store(true)
	}
	if final {
		g.err = err
	}
	g.flight = nil
	g.mu.Unlock()
	close(f.done)
}

// infoRefused reports a reply that means the server will not run INFO for this client: an
// ACL without it (NOPERM), a proxy's "unknown command", an embedded server's own wording. The
// replies that say the server cannot answer now (transientReplies) do not count: the next
// call asks again.
func infoRefused(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	kind, _, _ := strings.Cut(rerr.Error(), " ")
	return !transientReplies[kind]
}

// transientReplies are the error codes of a server that is up but cannot serve yet.
// An authentication error (NOAUTH, WRONGPASS) is no refusal either: scripts fail on it too.
var transientReplies = map[string]bool{
	"LOADING": true, "BUSY": true, "MASTERDOWN": true, "TRYAGAIN": true, "CLUSTERDOWN": true,
	"NOAUTH": true, "WRONGPASS": true,
}

// Passed reports whether a check has passed, so later ones need no round trip.
func (g *VersionGate) Passed() bool { return g.ok.Load() }

// ParseVersion reads major and minor from INFO server's redis_version line.
func ParseVersion(info string) (major, minor int, ok bool) {
	v, found := infoValue(info, "redis_version")
	parts := strings.SplitN(v, ".", 3)
	if !found || len(parts) < 2 {
		return 0, 0, false
	}
	var err1, err2 error
	major, err1 = strconv.Atoi(parts[0])
	minor, err2 = strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

// infoValue returns the value of field in an INFO reply ("field:value" lines).
func infoValue(info, field string) (string, bool) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, true
		}
	}
	return "", false
}
