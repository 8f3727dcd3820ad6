// Package benchmarks measures relq's three backends against watermill-redisstream, the
// Redis adapter a Watermill user would pick today, on one Redis server in one run: publish
// throughput (one goroutine and many on one Publisher), consume+ack and end-to-end throughput,
// what publishing and consuming cost Redis per message (CPU and commands, from INFO cpu and
// commandstats), pickup latency, delay lateness, recovery after a crash, memory per queued
// message, the commands an idle subscriber costs, the slowest single Redis call of each path
// on a group holding many messages (SLOWLOG), and redis-benchmark's LPUSH rate as the
// physical reference. Report.Goals judges the project's targets on those figures.
//
// The machine's speed drifts by tens of percent over minutes, so the figures that feed ratios
// and targets (publish, consume+ack, end-to-end, their Redis costs) are measured in
// Config.Rounds interleaved rounds, each measuring a figure for every target back to back in
// a rotating order; a figure is the median of its rounds and a ratio the median of the
// per-round ratios (see rounds.go). The reference runs before and after the rounds.
//
// Every measurement works under its own key prefix (relq) or stream (the baseline) and
// deletes its keys when it ends. Nothing here asserts speed: the figures are for reading,
// best as ratios, since absolute rates depend on the machine. Several figures read
// server-wide counters (INFO, SLOWLOG), so the server must be one nobody else uses.
//
// `relq bench` (internal/cli) prints a Report; bench_test.go runs the same measurements at
// small scale as Go benchmarks.
package benchmarks
