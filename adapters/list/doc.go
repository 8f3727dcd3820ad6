// Package list is the list backend of relq: a Redis LIST per group as the ready queue and
// BLMOVE ready -> processing as the claim primitive, the lowest-latency FIFO work queue of
// relq's three backends.
//
// # Key layout
//
// Every key of a topic starts with the hash tag {prefix:topic} (T below), so every script
// touches one Cluster slot. The keys are the group engine's, shared with the zset backend,
// except the three of the ready store (lua/store.lua):
//
//	T:meta                     HASH    seq (delivery ID counter), ver (registry version),
//	                                   layout (2), publish lanes p:<instance>:<n>, backlog
//	                                   (while there is one), expire (all groups ephemeral)
//	T:bodies                   HASH    id -> encoded envelope, stored once for all groups
//	T:refs                     HASH    id -> groups still holding it, only while more than one
//	T:registry                 HASH    group -> "seq[:flags]": seq when it registered, flags
//	                                   p (paused), e (ephemeral)
//	T:ephemeral                ZSET    ephemeral group -> its latest member's deadline (ms)
//	T:trash                    ZSET    id -> when a deleted group's keys moved to T:trash:<id>:*
//	T:backlog:<store key>      ...     what was published while the topic had no group (ready,
//	                                   delayed, processing), renamed to the first group's
//	T:g:<group>:ready          LIST    "id@ms" (ready since ms): published at the left, claimed
//	                                   from the right; at most one "wake" (no message: see Claim)
//	T:g:<group>:delayed        ZSET    id -> due (ms): delayed publishes and nack backoff
//	T:g:<group>:processing     LIST    entries BLMOVE moved, until register.lua leases them
//	T:g:<group>:pending        ZSET    id -> lease deadline (ms)
//	T:g:<group>:pending_at     ZSET    id -> pending since (ms)
//	T:g:<group>:holders        HASH    id -> "consumer:attempt:since:" (consumer "" for an
//	                                   orphan lease, held by nobody): the fencing token
//	T:g:<group>:retries        HASH    id -> deliveries so far, for a message back in ready
//	T:g:<group>:dead           ZSET    id -> dead-lettered at (ms), oldest first
//	T:g:<group>:dead_info      HASH    id -> "attempts||reason"
//	T:g:<group>:counters       HASH    cumulative counters (claimed, acked, ...)
//	T:g:<group>:members        ZSET    an ephemeral group's consumers -> deadline (ms)
//	T:trash:<id>:<name>        ...     a deleted group's keys until drain.lua freed them
//
// When every message is acked, only meta, registry and the counters remain; when the last
// group is deleted, nothing.
//
// # How the contract is kept
//
// Every state change is one Lua script (the group engine's, or lua/register.lua) or one native
// command (BLMOVE for a blocking claim), with time from Redis TIME.
//
// Publish fans out with declared keys only: it passes publish.lua the registry version it has
// cached, with those groups' keys; when the version in T:meta differs the script writes
// nothing and returns the registry, and Publish retries with it. So a publish is one round
// trip unless groups changed. A claim without blocking pops a batch from ready (RPOP with a
// count) and leases it in the same script; an ack removes a batch from pending with one
// command per structure, whatever is in flight.
//
// A blocking claim is BLMOVE, woken by the publish itself, followed by register.lua, which
// takes the moved entry out of processing and leases it. Between the two the entry is in
// processing without a lease; if the consumer dies there, Reclaim finds the orphan and gives it
// a lease without a holder, which either register.lua takes over or expires like any lease
// (Capabilities.PendingOrphans). processing only ever holds entries in that window, so the
// LREM that takes one out finds it near the head.
//
// An immediate retry, a release and a reclaimed lease go back to the consume end of ready, so
// they are claimed next; a delayed retry waits in the delayed ZSET. Delayed messages are
// promoted to the back of ready by Claim and Reclaim once due, and by an idle consumer at the
// due time it waits for, so with delays, order is by promotion rather than strictly by due
// time; they come on time to idle consumers (Capabilities.OnTimeDelay, see Claim). A new group sees only messages published after
// it registered (Capabilities.NewGroupReplay is false), but for the topic's first group, which
// takes the backlog: what was published while the topic had no group.
package list
