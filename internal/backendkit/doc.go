// Package backendkit holds the parts of backend.Backend that the adapters (adapters/list,
// adapters/zset, adapters/streams) implement alike: the Redis version check, name and Options
// validation, script arguments and replies, the settle and dead-letter script calls, and the
// decoding of deliveries, dead letters and stats. What differs between the adapters (key
// layouts, claim loops, the scripts themselves) stays in each adapter.
package backendkit
