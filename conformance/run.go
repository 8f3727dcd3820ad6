// Package conformance is relq's delivery contract written as a test suite, so that every
// Backend (adapters/list, adapters/zset, adapters/streams, or one of your own) proves it keeps
// the same semantics under the same Publisher and Subscriber.
//
// An adapter's test package calls Run once with a Factory:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t *testing.T, opts conformance.Options) conformance.Harness {
//			client := ... // a Redis client; a server of its own when opts.Private
//			b, err := mybackend.New(client, mybackend.Options{Prefix: uniquePrefix(t)})
//			require.NoError(t, err)
//			return conformance.Harness{Backend: b}
//		})
//	}
//
// Tests run in parallel, each in a namespace of its own, and skip (with the reason) what a
// backend does not declare in its Capabilities or what the Harness cannot do. The lifecycle
// cases (Admin, backlog, deletes, ephemeral groups) need the backend to implement backend.Admin
// and backend.Ephemeral and the Harness to give Keys and Peer; a Harness that sets Complete
// makes a missing one a failure instead of a skip.
package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/relq/relq/backend"
)

// Faults lets the suite create states that only failures produce. A backend's test package
// implements it; it writes Redis keys directly, as a crash or a foreign writer would.
type Faults interface {
	// InjectCorrupt stores data as a ready entry of the group, as if another program had
	// written bytes that are not a relq envelope.
	InjectCorrupt(ctx context.Context, topic, group string, data []byte) error
	// InjectOrphan moves the group's next ready message to pending without a lease record,
	// as a consumer that crashed between claiming and registering its lease leaves it, and
	// returns its delivery ID ("" when nothing is ready). The suite publishes one first.
	InjectOrphan(ctx context.Context, topic, group string) (string, error)
}

// Harness is what a Factory gives one test.
type Harness struct {
	// Backend is fresh for each call: a key prefix (namespace) no other test uses.
	Backend backend.Backend
	// Faults injects failure states; nil skips the corrupt-entry and orphan tests.
	Faults Faults
	// Outage stops Redis for d and starts it again with its data (AOF). Set it only when
	// Options.Private asked for a server of the test's own; nil skips the outage test.
	Outage func(d time.Duration) error

	// Admin inspects and steers the backend; nil: the Backend itself, when it implements
	// backend.Admin. Without either the Admin cases are skipped. (Ephemeral groups are
	// always the Backend's: the Subscriber finds them there.)
	Admin backend.Admin
	// Keys lists the keys the backend keeps in Redis for a topic, in any order, leaving out
	// those that expire by themselves within a minute of their write whatever else happens
	// (a publish's idempotency record) and a partitioned topic's record of its partition count,
	// its configuration, which lasts until DeleteTopic. The suite never reads key names for their layout: it
	// checks that a topic left nothing behind, or that no key names a deleted group (a key
	// one of whose ':'-separated parts is the group's name). nil skips those cases.
	Keys func(topic string) ([]string, error)
	// Peer makes another Backend on the same server and namespace (with Options applied),
	// on a Redis client of its own, standing in for another process; the Factory closes it
	// with the test. nil skips the cases that need one.
	Peer func() (backend.Backend, error)
	// Forget deletes every key the backend keeps in Redis for topic, as a Redis that
	// restarted empty, a FLUSHALL or another client's DEL would: nil skips the cases where a
	// group's state vanishes under running subscriptions.
	Forget func(topic string) error
	// Complete declares that the backend implements backend.Admin and backend.Ephemeral and
	// that Keys, Peer and Forget are set, so that a lifecycle case that would skip for want of one
	// fails instead: relq's own adapters set it, so their runs never skip one by mistake.
	Complete bool
}

// Options tell a Factory what a test needs.
type Options struct {
	// Private: the test stops Redis, so it needs a server of its own.
	Private bool
	// BacklogLimit and BacklogTTL, when not zero, bound the backlog of a topic that has no
	// group (see backend.BacklogLimitDefault): the Factory passes them to the backend's
	// options of those names. The backlog cases ask for small ones, and fail when the
	// backend keeps more, or keeps it longer, than they asked.
	BacklogLimit int
	BacklogTTL   time.Duration
	// BacklogFull, when not empty, is the backend's policy for a full backlog (the option
	// of that name); the Refused case asks for backend.BacklogRefuse.
	BacklogFull backend.BacklogPolicy
	// TombstoneTTL, when not zero, is how long a group deleted through the Admin API stays
	// deleted for the subscriptions that find it missing (see backend.TombstoneTTLDefault):
	// the Factory passes it to the backend's option of that name. The vanish cases ask for a
	// short one, and fail when the tombstone outlives it.
	TombstoneTTL time.Duration
}

// Factory makes the Harness of one test. Register clean-ups with t.Cleanup: they run after
// the suite's own (publishers and subscribers close first).
type Factory func(t *testing.T, opts Options) Harness

// Run runs the whole suite against the backends factory makes.
func Run(t *testing.T, factory Factory) {
	groups := []struct {
		name string
		run  func(*testing.T, Factory)
	}{
		{"RoundTrip", testRoundTrip},
		{"LoadBalance", testLoadBalance},
		{"Nack", testNack},
		{"Lease", testLease},
		{"DeadLetter", testDeadLetter},
		{"Close", testClose},
		{"Groups", testGroups},
		{"Delay", testDelay},
		{"IdleWake", testIdleWake},
		{"Order", testOrder},
		{"Ordered", testOrdered},
		{"Priority", testPriority},
		{"Outage", testOutage},
		{"Validation", testValidation},
		{"Stats", testStats},
		{"FarFuture", testFarFuture},
		{"Admin", testAdmin},
		{"Messages", testMessages},
		{"MessageOps", testMessageOps},
		{"Pause", testPause},
		{"Delete", testDelete},
		{"Backlog", testBacklog},
		{"Ephemeral", testEphemeral},
		{"Vanish", testVanish},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, factory)
		})
	}
}

// run starts one parallel test with a Harness of its own.
func run(t *testing.T, f Factory, name string, opts Options, test func(t *testing.T, h Harness)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		h := f(t, opts)
		if h.Backend == nil {
			t.Fatal("conformance: the Factory returned a Harness without a Backend")
		}
		test(t, h)
	})
}
