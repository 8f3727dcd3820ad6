// Package list is the list backend of relq: a Redis LIST per group as the ready queue and
// BLMOVE ready -> processing as the claim primitive, the lowest-latency FIFO work queue of
// relq's three backends.
//
// # Key layout
//
// Every key of a topic starts with the hash tag {prefix:topic} (T below), so every script
// touches one Cluster slot. Key names are built in keys.go only.
//
//	T:seq                      STRING  delivery ID counter (INCR): monotonic, never reused
//	T:bodies                   HASH    id -> encoded envelope, stored once for all groups
//	T:refs                     HASH    id -> groups still holding it, only while more than one
//	T:groups                   SET     registered groups
//	T:g:<group>:ready          LIST    "id@ms" (ready since ms): published at the left, claimed
//	                                   from the right
//	T:g:<group>:delayed        ZSET    id -> due (ms): delayed publishes and nack backoff
//	T:g:<group>:processing     LIST    ids claimed (pending), newest at the left
//	T:g:<group>:leases         ZSET    id -> lease deadline (ms)
//	T:g:<group>:holders        HASH    id -> "consumer:since": lease holder, pending since (ms);
//	                                   ":since" for an orphan lease, held by nobody
//	T:g:<group>:attempts       HASH    id -> deliveries so far (the fencing token with holder)
//	T:g:<group>:dead           ZSET    id -> dead-lettered at (ms), oldest first
//	T:g:<group>:dead_reasons   HASH    id -> dead-letter reason
//	T:g:<group>:counters       HASH    cumulative counters (published, claimed, acked, ...)
//
// When every message is acked, only seq, groups and the counters remain.
//
// # How the contract is kept
//
// Every state change is one Lua script from lua/ (or one native command: SADD for
// EnsureGroup, BLMOVE for a blocking claim), with time from Redis TIME.
//
// Publish fans out with declared keys only: it passes publish.lua the groups it believes are
// registered, with their keys; the script compares them with T:groups and, if they differ,
// writes nothing and returns the registry, and Publish retries with it. The registry is cached
// per topic, so a publish is one round trip unless groups changed.
//
// A blocking claim is BLMOVE, woken by the publish itself, followed by register.lua, which
// leases the moved id. Between the two the id is in processing without a lease; if the
// consumer dies there, Reclaim finds the orphan and gives it a lease without a holder, which
// either register.lua takes over or expires like any lease (Capabilities.PendingOrphans).
//
// An immediate retry, a release and a reclaimed lease go back to the consume end of ready, so
// they are claimed next; a delayed retry waits in the delayed ZSET. Delayed messages are
// promoted to the back of ready by Claim and Reclaim once due, so with delays, order is by
// promotion rather than strictly by due time. A new group sees only messages published after
// it registered (Capabilities.NewGroupReplay is false).
package list
