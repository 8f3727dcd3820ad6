// Package partition lays out a partitioned topic: one topic spread over P ordinary topics of
// the underlying backend (its partitions), each with a hash tag of its own, so that a topic
// can grow past one Redis primary.
//
// What it settles, and why here:
//
//   - Names and slots. Partition i of topic t is the backend topic "t|i|s", where the salt s is
//     the smallest number that puts the partition's hash tag in the i-th of P equal ranges of
//     Redis Cluster's 16384 slots. With the cluster's usual even slot split, P partitions land
//     evenly on its primaries whatever the prefix and topic, and a resharding moves whole
//     partitions. The choice depends only on the hash tag the backend builds (its prefix and
//     format), never on a cluster's current node map, so every process computes the same names.
//   - Keys. A message's partition is a stable function of its key (FNV-1a, 32 bits, modulo P):
//     the same key goes to the same partition in every process and every release.
//   - The record. P is fixed when the topic is created and recorded in Redis beside the topic's
//     own keys; a process configured with another P gets a *CountError. A topic with P = 1
//     writes no record and keeps today's keys byte for byte.
//
// The partitions themselves are ordinary topics: list, zset and streams keep their scripts.
// Backend (Wrap) keeps the delivery contract on top of them:
//
//   - Publish splits a batch by key and sends the parts concurrently; a delivery ID is
//     "<partition>:<ID in the partition>", so acks, nacks, lease extensions and operators'
//     commands reach the partition that holds the message.
//   - The subscriptions of a group share its partitions (Assign, Sync): each claims from its
//     own share, one partition at a time, and an idle one sleeps on the topic's bell, a sharded
//     Pub/Sub channel that publishes, nacks and due times ring. A process holds one bell
//     connection per topic it consumes, and a claim round one pooled connection at a time; the
//     fan-out of other calls is bounded by fanout.
//   - Stats, dead letters and the Admin API add up, list and page over every partition.
package partition
