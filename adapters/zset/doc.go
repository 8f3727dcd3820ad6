// Package zset is the zset backend of relq: the delay and priority queue. A group's ready
// store is two Redis sorted sets: the due messages in claim order (higher priority first, then
// earlier due time), and the delayed ones by due time in milliseconds on the Redis clock. So
// delayed delivery, nack backoff and priorities are native, and a claim takes only what is due.
//
// # Key layout
//
// Every key of a topic starts with the hash tag {prefix:topic} (T below), so every script
// touches one Cluster slot. The keys are the group engine's, shared with the list backend,
// except the three of the ready store (lua/store.lua) and the consumers' own wake-up lists:
//
//	T:meta                      HASH    seq (delivery ID counter), ver (registry version),
//	                                    layout (2), publish lanes, w:<group> (asleep until, ms),
//	                                    backlog (while there is one), expire (all ephemeral)
//	T:bodies                    HASH    id -> encoded envelope, stored once for all groups
//	T:refs                      HASH    id -> groups still holding it, only while more than one
//	T:zregistry                 HASH    group -> "seq[:flags]": seq when it registered, flags
//	                                    p (paused), e (ephemeral) (not "registry": see TopicNames)
//	T:ephemeral                 ZSET    ephemeral group -> its latest member's deadline (ms)
//	T:trash                     ZSET    id -> when a deleted group's keys moved to T:trash:<id>:*
//	T:backlog:queue, :ready     ZSET    what was published while the topic had no group,
//	                                    renamed to the first group's queue and ready
//	T:g:<group>:queue           ZSET    "<due><n><id>" -> rank: the due messages, in claim order
//	T:g:<group>:ready           ZSET    "<rank>:<id>" -> due time (ms): delayed messages, and
//	                                    due ones no claim has moved to queue yet
//	T:g:<group>:wake            LIST    wake-up token (at most one, expires) for blocked claims
//	T:g:<group>:wake:<consumer> LIST    a consumer's own wake-up token, pushed at a due time
//	T:g:<group>:pending         ZSET    id -> lease deadline (ms)
//	T:g:<group>:pending_at      ZSET    id -> pending since (ms)
//	T:g:<group>:holders         HASH    id -> "consumer:attempt:since:due:priority": the
//	                                    fencing token, and where a release puts it back
//	T:g:<group>:retries         HASH    id -> deliveries so far, for a message back in ready
//	T:g:<group>:dead            ZSET    id -> dead-lettered at (ms), oldest first
//	T:g:<group>:dead_info       HASH    id -> "attempts|due:priority|reason"
//	T:g:<group>:counters        HASH    cumulative counters (claimed, acked, ...)
//	T:g:<group>:members         ZSET    an ephemeral group's consumers -> deadline (ms)
//	T:trash:<id>:<name>         ...     a deleted group's keys until drain.lua freed them
//
// When every message is acked, only meta, zregistry and the counters remain (and, for up to
// ten seconds, a wake-up token); when the last group is deleted, nothing.
//
// # Members and the ordering rule
//
// A message's due time is Redis now (TIME, inside the script) + its delay, one now for a
// whole publish batch; its rank is PriorityMax - priority (pubsub.SetPriority, clamped to
// [PriorityMin, PriorityMax] = [-999999, 999999], 0 by default), so a higher priority has a
// lower rank. Redis orders members of equal score bytewise, and each member is written so:
//
//	queue  score rank, member "<due><n><id>"  due zero-padded to 13 digits, n the letter
//	                                         giving the ID's number of digits (A: 1, B: 2, ...)
//	ready  score due,  member "<rank>:<id>"   rank zero-padded to 7 digits, id to 16
//
// A message due now goes to queue at once; a delayed one waits in ready. A claim first moves
// the due members of ready to queue, earliest due first and at most BatchSize of them, then
// pops the head of queue. The ordering rule, among the messages that are due when a consumer
// claims:
//
//  1. higher priority first;
//  2. within a priority, earlier due time first;
//  3. within a priority and a due time, publish order (delivery ID).
//
// A message that is not due yet is never claimed, whatever its priority. The rule is exact
// as long as no more than BatchSize due messages wait in ready for a claim, which holds
// whenever consumers run: each claim moves up to BatchSize (1000) while it takes Count
// (Prefetch + Concurrency). After an outage in which more than that became due in ready, a
// high-priority one among them waits for the claims that move those due before it, BatchSize
// each. With one consumer and equal priorities, messages come in due order
// (Capabilities.DueOrder), and in publish order when nothing is delayed (Capabilities.FIFO).
//
// # Retries, releases and reclaims
//
// A nack with a delay puts the message in ready at Redis now + delay (retry backoff is
// native). An immediate nack and a release (a subscriber closing with prefetched messages)
// queue it with the due time it had when claimed (kept in its holders record, never later than
// now): it keeps its place in line within its priority, ahead of what became due after it and
// behind what was due before it, so one consumer still sees publish order and a retry never
// overtakes a message that waited longer. An expired lease is queued due now, behind what of
// its priority is already due: the consumer that held it probably crashed, possibly on this
// very message, and the rest goes first. At MaxDeliveries both a nack and an expired lease
// dead-letter the message.
//
// # Wake-ups: no polling, no lateness
//
// A claim is claim.lua; when it finds nothing due it returns the ms until the earliest
// scheduled message (computed on the Redis clock), and the consumer sleeps in one BLPOP on the
// group's wake list and its own, until a token arrives, that message is due, or Block ends:
//
//   - a publish pushes a token onto the group's wake list, unless one is there, while a
//     consumer of the group may be asleep: claim.lua marks the group asleep in T:meta
//     (w:<group>) until the end of the Block it returns to, and publish.lua reads the mark with
//     the meta fields it reads anyway, so a publish to busy consumers pushes nothing; a nack,
//     reclaim or requeue always pushes one. One blocked consumer wakes and runs claim.lua again;
//   - claim.lua pushes a token when its batch is full and more is due, so one wake-up drains a
//     burst across several consumers, each passing it on;
//   - Redis ends a blocking command at its timeout only when its event loop next runs, on an
//     idle server at its next tick (every 100 ms at the default hz 10), so a BLPOP timeout cut
//     to the due time would wake up to 100 ms late. Instead a timer in the sleeping consumer
//     pushes a token onto the consumer's own wake list at the due time (wake.lua), which ends
//     its BLPOP within a round trip; the BLPOP's timeout is only a fallback, a little later.
//
// An idle consumer thus sends one BLPOP per Block and one claim.lua per idle probe (1s),
// whatever is scheduled: between probes its Claims go straight to BLPOP, since the group's
// sleep mark (Block + IdleProbe) makes every publish push a token. A delayed message is
// claimed within milliseconds after it is due. The BLPOP timeout is sent in milliseconds
// (go-redis's typed BLPop rounds to whole seconds) and is bounded below the client's
// ReadTimeout, with room for Redis ending it a tick late.
//
// # Choosing zset or list
//
// Choose zset for delayed and scheduled delivery and retry backoff: a delayed message waits in
// the ready store itself, is claimed within milliseconds of its due time, and messages come in
// due order (Capabilities.OnTimeDelay, DueOrder, NativeDelay); and for priorities: among due
// messages, higher priority first (Capabilities.Priorities). Choose list for the plain work queue: its ready queue is a LIST
// (O(1) per message, where a ZSET is O(log n)), and a publish hands messages to several
// blocked list consumers at once (BLMOVE), where it wakes one zset consumer, which passes the
// wake-up on when more is due.
//
// # How the contract is kept
//
// Every state change is one Lua script (the group engine's, or lua/wake.lua) or one native
// command (BLPOP for a wake-up token), with time from Redis TIME inside the script. Publish
// fans out with declared keys only, as the list backend does: it passes publish.lua the
// registry version it has cached (per topic), with those groups' keys; when it differs the
// script writes nothing and returns the registry for a retry. Claim takes and leases in
// one script, so nothing is ever pending without a lease (Capabilities.PendingOrphans is
// false). A new group sees only messages published after it registered
// (Capabilities.NewGroupReplay is false). The Backend is a backend.ReplicaWaiter, for
// PublisherConfig.WaitReplicas (the same code as the list backend's).
package zset
