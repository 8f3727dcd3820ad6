package engine_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/adaptertest"
	"github.com/stretchr/testify/require"
)

// groupKeys lists the keys of group among keys ("g:<group>:...").
func groupKeys(keys []string, group string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, "g:"+group+":") {
			out = append(out, k)
		}
	}
	return out
}

// After DeleteGroup a claim of the group fails with ErrGroupDeleted, its holders' acks, nacks,
// extensions and reclaims are stale and create no key, another group keeps every message, and
// a new group of the name starts empty.
func TestADeletedGroupIsGoneForItsSubscribers(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "g")
			ensure(t, e, "t", "other")
			publish(t, e, "t", "a", "b", "c")
			held := claim(t, e, "t", "g", "w", 2)
			require.Len(t, held, 2)
			require.NoError(t, e.DeleteGroup(ctx, "t", "g"))

			_, err := claimErr(t, e, "t", "g", "w", 10)
			require.ErrorIs(t, err, backend.ErrGroupDeleted)
			ar, err := e.Ack(ctx, &backend.AckParams{Topic: "t", Group: "g", Consumer: "w", Items: adaptertest.Held(held...)})
			require.NoError(t, err)
			require.Equal(t, backend.AckResult{Stale: 2}, ar)
			nr, err := e.Nack(ctx, &backend.NackParams{Topic: "t", Group: "g", Consumer: "w",
				Items: []backend.NackItem{{ID: held[0].ID, Attempt: 1}, {ID: held[1].ID, Attempt: 1, DeadLetter: true}}})
			require.NoError(t, err)
			require.Equal(t, backend.NackResult{Stale: 2}, nr)
			lost, err := e.Extend(ctx, &backend.ExtendParams{Topic: "t", Group: "g", Consumer: "w", Items: adaptertest.Held(held...), Lease: time.Minute})
			require.NoError(t, err)
			require.ElementsMatch(t, adaptertest.IDs(held), lost)
			rr, err := e.Reclaim(ctx, &backend.ReclaimParams{Topic: "t", Group: "g"})
			require.NoError(t, err)
			require.Equal(t, backend.ReclaimResult{}, rr)
			require.Empty(t, groupKeys(tagKeys(t, e, "t"), "g"), "no key of the deleted group is created again")

			require.Equal(t, []string{"a", "b", "c"}, adaptertest.Payloads(claim(t, e, "t", "other", "w", 10)))
			require.ErrorIs(t, e.DeleteGroup(ctx, "t", "g"), backend.ErrGroupNotFound)
			require.Equal(t, []string{"other"}, groupsOf(t, e, "t"))

			ensure(t, e, "t", "g")
			require.Empty(t, claim(t, e, "t", "g", "w", 10), "a new group of the name starts empty")
			publish(t, e, "t", "d")
			require.Equal(t, []string{"d"}, adaptertest.Payloads(claim(t, e, "t", "g", "w", 10)))
		})
	}
}

// Deleting one of two groups that share bodies frees only its own references, in steps of
// BatchSize when it holds more (ready, delayed, pending, dead): the other group still gets
// every body, and once it acks them the bodies are gone and no trash is left.
func TestDeleteGroupFreesOnlyItsOwnReferences(t *testing.T) {
	t.Parallel()
	for name, e := range backendsWith(t, backend.Options{BatchSize: 2}) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "a")
			ensure(t, e, "t", "b")
			publish(t, e, "t", "1", "2", "3", "4", "5", "6")
			_, err := e.Publish(ctx, &backend.PublishParams{Topic: "t", Messages: []backend.OutMessage{
				{Envelope: adaptertest.Envelope("later"), Delay: time.Hour}}})
			require.NoError(t, err)
			held := claim(t, e, "t", "a", "w", 2)
			_, err = e.Nack(ctx, &backend.NackParams{Topic: "t", Group: "a", Consumer: "w",
				Items: []backend.NackItem{{ID: held[0].ID, Attempt: 1, DeadLetter: true, Reason: "bad"}}})
			require.NoError(t, err)
			s := stats(t, e, "t", "a")
			require.Equal(t, [4]int64{4, 1, 1, 1}, [4]int64{s.Ready, s.Delayed, s.Pending, s.Dead}, "a holds messages in every state")

			require.NoError(t, e.DeleteGroup(ctx, "t", "a"))
			keys := tagKeys(t, e, "t")
			require.Empty(t, groupKeys(keys, "a"))
			require.NotContains(t, strings.Join(keys, " "), "trash", "a finished deletion leaves no trash")

			got := claimAll(t, e, "t", "b", "w", 2)
			require.Equal(t, []string{"1", "2", "3", "4", "5", "6"}, adaptertest.Payloads(got), "every body is there for b")
			for _, d := range got {
				require.NoError(t, d.Err)
			}
			_, err = e.Ack(ctx, &backend.AckParams{Topic: "t", Group: "b", Consumer: "w", Items: adaptertest.Held(got...)})
			require.NoError(t, err)
			bodies := e.Client().HKeys(ctx, e.Keys("t", "b").Bodies()).Val()
			require.Len(t, bodies, 1, "only the delayed message's body is left, which b holds")
		})
	}
}

// A deletion interrupted after unregistering (its process died) leaves the group's keys in the
// topic's trash: the next publishes free them step by step, and DeleteGroup finishes them.
func TestAnInterruptedDeleteIsFinished(t *testing.T) {
	t.Parallel()
	for name, e := range backendsWith(t, backend.Options{BatchSize: 2}) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			trash := e.TrashKey("t")
			for _, g := range []string{"a", "b", "c"} {
				ensure(t, e, "t", g)
			}
			publish(t, e, "t", "1", "2", "3", "4", "5", "6", "7", "8")
			require.NoError(t, e.DeleteGroupSteps(ctx, "t", "a", 0))
			require.EqualValues(t, 1, e.Client().ZCard(ctx, trash).Val(), "a's keys wait in the trash")
			require.EqualValues(t, 8, e.Client().HLen(ctx, e.Keys("t", "b").Refs()).Val())

			shared := func() int { // messages all three groups still hold
				n := 0
				for _, v := range e.Client().HGetAll(ctx, e.Keys("t", "b").Refs()).Val() {
					if v == "3" {
						n++
					}
				}
				return n
			}
			require.Equal(t, 6, shared(), "the delete freed a first step, and stopped")
			publish(t, e, "t", "9")
			require.Equal(t, 4, shared(), "a publish frees one more step")
			require.EqualValues(t, 1, e.Client().ZCard(ctx, trash).Val())
			require.NoError(t, e.DeleteGroupSteps(ctx, "t", "b", 0))
			require.EqualValues(t, 2, e.Client().ZCard(ctx, trash).Val())

			require.NoError(t, e.DeleteGroup(ctx, "t", "c"), "the last group: every key of the topic goes")
			require.Empty(t, keysLeft(t, e, "t"))
		})
	}
}

// When the topic's last group is deleted and it has no backlog, every key of the topic is
// deleted, meta included: a topic published to again (in its backlog) issues IDs above every
// one it issued before.
func TestDeletingTheLastGroupDeletesTheTopic(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "g")
			old := publish(t, e, "t", "a", "b")
			claim(t, e, "t", "g", "w", 1)
			waitClockPast(t, e, old)
			require.NoError(t, e.DeleteGroup(ctx, "t", "g"))
			require.Empty(t, keysLeft(t, e, "t"))
			_, err := e.Topic(ctx, "t")
			require.ErrorIs(t, err, backend.ErrTopicNotFound)
			requireAllAbove(t, publish(t, e, "t", "c"), old, "a topic created again continues above its earlier IDs")
		})
	}
}

// DeleteTopic leaves no key under the topic's tag: groups with messages in every state, the
// trash of an interrupted deletion, a backlog. Subscribers of its groups then get
// ErrGroupDeleted and their acks create nothing; other topics are untouched.
func TestDeleteTopicLeavesNoKey(t *testing.T) {
	t.Parallel()
	for name, e := range backendsWith(t, backend.Options{BatchSize: 2}) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			for _, g := range []string{"a", "b", "c"} {
				ensure(t, e, "t", g)
			}
			ensure(t, e, "kept", "g")
			publish(t, e, "kept", "x")
			publish(t, e, "t", "1", "2", "3", "4", "5")
			held := claim(t, e, "t", "a", "w", 2)
			_, err := e.Nack(ctx, &backend.NackParams{Topic: "t", Group: "b", Consumer: "w",
				Items: []backend.NackItem{{ID: claim(t, e, "t", "b", "w", 1)[0].ID, Attempt: 1, DeadLetter: true}}})
			require.NoError(t, err)
			require.NoError(t, e.DeleteGroupSteps(ctx, "t", "c", 0))
			require.NoError(t, e.PauseGroup(ctx, "t", "b"))
			publish(t, e, "backlog", "y")
			kept := tagKeys(t, e, "kept")

			require.NoError(t, e.DeleteTopic(ctx, "t"))
			require.NoError(t, e.DeleteTopic(ctx, "backlog"))
			require.Empty(t, keysLeft(t, e, "t"))
			require.Empty(t, keysLeft(t, e, "backlog"))
			require.Equal(t, kept, tagKeys(t, e, "kept"))
			require.ErrorIs(t, e.DeleteTopic(ctx, "t"), backend.ErrTopicNotFound)

			_, err = claimErr(t, e, "t", "a", "w", 1)
			require.ErrorIs(t, err, backend.ErrGroupDeleted)
			_, err = e.Ack(ctx, &backend.AckParams{Topic: "t", Group: "a", Consumer: "w", Items: adaptertest.Held(held...)})
			require.NoError(t, err)
			require.Empty(t, keysLeft(t, e, "t"))
		})
	}
}

// Deleting a group while its consumers claim and ack, and while publishes go on, leaves none
// of its keys behind: each consumer stops at its first ErrGroupDeleted, its last acks are
// stale no-ops, and the other group receives every message with its body.
func TestDeleteGroupWhileConsumersRun(t *testing.T) {
	t.Parallel()
	for name, e := range backendsWith(t, backend.Options{BatchSize: 4}) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "doomed")
			ensure(t, e, "t", "kept")
			const published = 200
			var wg sync.WaitGroup
			stopped := make(chan error, 3)
			for c := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					consumer := fmt.Sprintf("c%d", c)
					for {
						ds, err := e.ClaimOnce(ctx, &backend.ClaimParams{Topic: "t", Group: "doomed", Consumer: consumer, Count: 4, Lease: time.Minute}, 0)
						if err != nil {
							stopped <- err
							return
						}
						if _, err := e.Ack(ctx, &backend.AckParams{Topic: "t", Group: "doomed", Consumer: consumer, Items: adaptertest.Held(ds.Deliveries...)}); err != nil {
							stopped <- err
							return
						}
					}
				}()
			}
			for i := range published {
				publish(t, e, "t", strconv.Itoa(i))
				if i == published/2 {
					require.NoError(t, e.DeleteGroup(ctx, "t", "doomed"))
				}
			}
			wg.Wait()
			close(stopped)
			for err := range stopped {
				require.ErrorIs(t, err, backend.ErrGroupDeleted)
			}
			require.Empty(t, groupKeys(tagKeys(t, e, "t"), "doomed"))

			got := claimAll(t, e, "t", "kept", "w", 4)
			require.Len(t, got, published)
			for _, d := range got {
				require.NoError(t, d.Err, "every body is there for the other group")
			}
		})
	}
}

// A consumer that acks late, after its topic was deleted with its last group and created
// again, completes nothing of the new topic: the new topic's IDs are above the old ones, so
// the old delivery's ID names no message a new consumer holds.
func TestALateAckAfterTheTopicWasCreatedAgainCompletesNothing(t *testing.T) {
	t.Parallel()
	for name, e := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			ensure(t, e, "t", "g")
			publish(t, e, "t", "old")
			old := claim(t, e, "t", "g", "a", 1)
			require.Len(t, old, 1)
			waitClockPast(t, e, adaptertest.IDs(old))
			require.NoError(t, e.DeleteGroup(ctx, "t", "g"))
			require.Empty(t, keysLeft(t, e, "t"), "the last group took every key of the topic")

			ensure(t, e, "t", "g")
			publish(t, e, "t", "new")
			held := claim(t, e, "t", "g", "b", 1)
			require.Len(t, held, 1)
			require.Equal(t, "new", string(held[0].Envelope.Payload))

			late, err := e.Ack(ctx, &backend.AckParams{Topic: "t", Group: "g", Consumer: "a", Items: adaptertest.Held(old...)})
			require.NoError(t, err)
			require.Equal(t, 0, late.Acked, "a's late ack completes nothing")
			require.Zero(t, e.Client().Exists(ctx, e.Keys("t", "g").Retries()).Val(), "nor marks anything acked")
			require.EqualValues(t, 1, stats(t, e, "t", "g").Pending, "b's message is still pending")

			res, err := e.Ack(ctx, &backend.AckParams{Topic: "t", Group: "g", Consumer: "b", Items: adaptertest.Held(held...)})
			require.NoError(t, err)
			require.Equal(t, backend.AckResult{Acked: 1}, res, "b's ack completes it")
			require.Zero(t, stats(t, e, "t", "g").Pending)
			requireAllAbove(t, adaptertest.IDs(held), adaptertest.IDs(old), "the new topic's IDs")
		})
	}
}
