// Package benchmarks measures relq's three backends against watermill-redisstream, the
// Redis adapter a Watermill user would pick today, on one Redis server in one run: publish
// throughput, end-to-end throughput, pickup latency, delay lateness, recovery after a crash,
// memory per queued message, the commands an idle subscriber costs, and redis-benchmark's
// LPUSH rate as the physical reference.
//
// Every measurement works under its own key prefix (relq) or stream (the baseline) and
// deletes its keys when it ends. Nothing here asserts speed: the figures are for reading,
// best as ratios, since absolute rates depend on the machine.
//
// `relq bench` (internal/cli) prints a Report; bench_test.go runs the same measurements at
// small scale as Go benchmarks.
package benchmarks
