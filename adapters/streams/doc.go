// Package streams is the streams backend of relq: one Redis STREAM per topic, each relq group
// a Redis consumer group, the delivery ID the entry ID, the attempt the PEL delivery count and
// the lease the entry's idle time in the group's PEL. It keeps the stream's history, so a new
// group can start from the oldest retained message, and it can share a stream with
// watermill-redisstream (FormatWatermill) for a migration without draining. It implements
// backend.Admin (listings by state, deletes, pause) and backend.Ephemeral (Join, Leave), and
// keeps what is published to a topic without groups as its bounded backlog.
//
// See docs/streams-backend.md for the key layout and how each operation keeps the contract.
package streams
