package backendkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/relq/relq/backend"
)

// WaitLinger is how long a connection of Waits stays open with no wait on it: long enough
// for the next wait of a subscription that is claiming, short enough that the connections of
// subscriptions that stopped do not stay open for long.
const WaitLinger = 10 * time.Second

// waitBufferSize sizes the read and write buffers of a wait connection (go-redis's default
// is 32 KiB each): a blocking command and its reply are small, and go-redis reads a longer
// reply past its buffer.
const waitBufferSize = 4 << 10

// Waits runs a backend's blocking commands (BLMOVE, BLPOP, XREAD BLOCK) on connections of
// their own, one per wait in progress, so that blocked subscriptions never hold the
// connections of the client the backend was given (those stay for scripts and publishes)
// and their number is not bounded by that client's pool.
//
// Each connection is a go-redis client of one connection built from the given client's
// options (address, TLS, credentials, timeouts, OnConnect, client name): for a *redis.Client
// (failover clients too, which dial the current primary) to its server, for a
// *redis.ClusterClient to the primary that owns the waited key's slot. Hooks added to the
// given client with AddHook do not run on them. Other client types (redis.Ring, wrappers)
// run their waits on the given client, as if there were no Waits.
//
// A wait whose context ends closes its connection, so that Redis ends the blocked command at
// once instead of at its timeout. A wait that ends by itself keeps its connection for the
// next one; a connection no wait used for WaitLinger is closed. Close closes them all. The
// zero value is not ready to use: call NewWaits.
type Waits struct {
	user redis.UniversalClient

	mu     sync.Mutex
	closed bool
	hooks  []redis.Hook                // added to every connection's client
	idle   map[string][]idleWait       // by server address; a stack, most recently used last
	busy   map[*redis.Client]*waitConn // in a wait; Close closes and removes them
	sweep  *time.Timer                 // closes idle connections past WaitLinger; nil: none idle
}

type idleWait struct {
	c     *redis.Client
	conn  *waitConn
	since time.Time
}

// waitConn is what Waits knows of one wait connection: its Redis client ID, which the first
// RunUnblocked on the connection asks for (0: not asked yet on this connection, reset when it
// connects again; -1: CLIENT ID refused, by an ACL say), and a client of the same server to
// send CLIENT UNBLOCK through. Run never asks: only list's BLMOVE is unblocked.
type waitConn struct {
	id      atomic.Int64
	control redis.UniversalClient
}

// NewWaits returns the Waits of user, the client a backend was given. It opens nothing until
// the first wait.
func NewWaits(user redis.UniversalClient) *Waits {
	return &Waits{user: user, idle: map[string][]idleWait{}, busy: map[*redis.Client]*waitConn{}}
}

// Run calls wait with a client whose only connection is this wait's, reaching the server
// that holds key (any key of the topic: they share a hash tag), and returns wait's error.
// When ctx ends before wait returns, the connection is closed to end the blocking command,
// and Run returns ctx.Err(). After Close, or when Close ends the wait, Run returns an error
// wrapping backend.ErrClosed. A wait that succeeded returns nil whatever ended meanwhile.
func (w *Waits) Run(ctx context.Context, key string, wait func(context.Context, redis.UniversalClient) error) error {
	if err := ctx.Err(); err != nil {
		return err // before taking a connection that ctx would close at once
	}
	c, _, addr, err := w.take(ctx, key)
	if err != nil {
		return err
	}
	if c == nil {
		return wait(ctx, w.user)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	err = wait(ctx, c)
	ended := !stop()
	kept := w.give(addr, c, ended)
	switch {
	case err == nil:
		return nil
	case ended:
		return ctx.Err()
	case !kept:
		return errClosed
	}
	return err
}

// RunUnblocked is Run for a wait whose reply must be read even when ctx ends: list's BLMOVE,
// which may have moved an entry that only its reply lets the caller lease. When ctx ends, it
// does not close the connection but ends the blocked command with CLIENT UNBLOCK ... TIMEOUT,
// sent through the given client, so the command returns as if its timeout had passed (or
// with what it took just before), and wait's result is returned: nil error, or the
// command's. Where the wait connection's ID is unknown (ACL refused CLIENT ID) or CLIENT
// UNBLOCK is refused, the wait ends by its own timeout, as before. wait gets a context that
// ctx's end does not cancel.
func (w *Waits) RunUnblocked(ctx context.Context, key string, wait func(context.Context, redis.UniversalClient) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, conn, addr, err := w.take(ctx, key)
	if err != nil {
		return err
	}
	if c == nil {
		return wait(context.WithoutCancel(ctx), w.user)
	}
	if conn.id.Load() == 0 {
		// Once per connection; a reconnect meanwhile resets it first (waitOptions), so the ID
		// is always this connection's.
		id, err := c.ClientID(ctx).Result()
		var refused redis.Error
		switch {
		case err == nil:
			conn.id.Store(id)
		case errors.As(err, &refused):
			conn.id.Store(-1)
		}
	}
	unblocked := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(unblocked)
		if id := conn.id.Load(); id > 0 {
			uctx, cancel := context.WithTimeout(context.Background(), unblockTimeout)
			defer cancel()
			_ = conn.control.Do(uctx, "client", "unblock", id, "timeout").Err()
		}
	})
	err = wait(context.WithoutCancel(ctx), c)
	if !stop() {
		<-unblocked // the CLIENT UNBLOCK holds a pooled connection until it is answered
	}
	if !w.give(addr, c, false) && err != nil {
		return errClosed
	}
	return err
}

// unblockTimeout bounds a CLIENT UNBLOCK: if it cannot be sent, the wait ends by its timeout.
const unblockTimeout = 2 * time.Second

var errClosed = fmt.Errorf("%w: the backend's blocking claims were closed", backend.ErrClosed)

// Close closes every connection Waits opened, ending the waits in progress; those and every
// later Run return an error wrapping backend.ErrClosed. It does not close the given client.
func (w *Waits) Close() error {
	w.mu.Lock()
	w.closed = true
	var all []*redis.Client
	for _, stack := range w.idle {
		for _, i := range stack {
			all = append(all, i.c)
		}
	}
	for c := range w.busy {
		all = append(all, c)
	}
	clear(w.idle)
	clear(w.busy)
	if w.sweep != nil {
		w.sweep.Stop()
		w.sweep = nil
	}
	w.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
	return nil
}

// AddHook adds hook to the clients of the connections Waits opens from now on (the given
// client's own hooks do not run on them): tests count the commands of blocking claims with it.
func (w *Waits) AddHook(hook redis.Hook) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hooks = append(w.hooks, hook)
}

// take returns an idle connection to key's server, or a new one, marked busy; nil for a
// client type whose options it cannot copy.
func (w *Waits) take(ctx context.Context, key string) (*redis.Client, *waitConn, string, error) {
	if w.isClosed() {
		return nil, nil, "", errClosed
	}
	var opt *redis.Options
	var control redis.UniversalClient
	switch c := w.user.(type) {
	case *redis.Client:
		opt, control = c.Options(), c
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, nil, "", err
		}
		opt, control = node.Options(), node
	default:
		return nil, nil, "", nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, nil, "", errClosed
	}
	var c *redis.Client
	var conn *waitConn
	if stack := w.idle[opt.Addr]; len(stack) > 0 {
		top := stack[len(stack)-1]
		c, conn = top.c, top.conn
		if len(stack) == 1 {
			delete(w.idle, opt.Addr)
		} else {
			w.idle[opt.Addr] = stack[:len(stack)-1]
		}
	} else {
		conn = &waitConn{control: control}
		c = redis.NewClient(waitOptions(opt, conn))
		for _, h := range w.hooks {
			c.AddHook(h)
		}
	}
	w.busy[c] = conn
	return c, conn, opt.Addr, nil
}

func (w *Waits) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// give takes c back after a wait and keeps it idle unless its context closed it (ended). It
// reports false when c is closed: by its context, or by Close meanwhile.
func (w *Waits) give(addr string, c *redis.Client, ended bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	conn, ok := w.busy[c]
	if !ok {
		return false
	}
	delete(w.busy, c)
	if ended {
		return false
	}
	w.idle[addr] = append(w.idle[addr], idleWait{c: c, conn: conn, since: time.Now()})
	if w.sweep == nil {
		w.sweep = time.AfterFunc(WaitLinger, w.sweepIdle)
	}
	return true
}

// sweepIdle closes the connections idle for WaitLinger, and runs again when the oldest of
// the others will have been.
func (w *Waits) sweepIdle() {
	w.mu.Lock()
	cutoff := time.Now().Add(-WaitLinger)
	var old []*redis.Client
	var next time.Time
	for addr, stack := range w.idle {
		n := 0
		for n < len(stack) && !stack[n].since.After(cutoff) {
			old = append(old, stack[n].c)
			n++
		}
		if n == len(stack) {
			delete(w.idle, addr)
			continue
		}
		w.idle[addr] = stack[n:]
		if next.IsZero() || stack[n].since.Before(next) {
			next = stack[n].since
		}
	}
	w.sweep = nil
	if !next.IsZero() {
		w.sweep = time.AfterFunc(time.Until(next.Add(WaitLinger)), w.sweepIdle)
	}
	w.mu.Unlock()
	for _, c := range old {
		_ = c.Close()
	}
}

// waitOptions are user's options for a client of one connection, used by one wait at a time,
// which forgets conn's client ID when it connects (again).
func waitOptions(user *redis.Options, conn *waitConn) *redis.Options {
	o := *user
	onConnect := user.OnConnect
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if onConnect != nil {
			if err := onConnect(ctx, cn); err != nil {
				return err
			}
		}
		conn.id.Store(0)
		return nil
	}
	o.PoolSize, o.MaxConcurrentDials = 1, 1
	o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 0, 0, 0
	o.PipelinePoolSize = -1 // no pool for pipelines: a wait sends one command
	o.ReadBufferSize, o.WriteBufferSize = waitBufferSize, waitBufferSize
	// No client-side cache: a wait reads nothing worth caching, and the cache is the user's.
	o.ClientSideCache, o.ClientSideCacheConfig = nil, nil
	// Its own push processor (NewClient stores the client's in its options), and no
	// maintenance notifications: a wait that a maintenance breaks is just retried.
	o.PushNotificationProcessor = nil
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return &o
}
