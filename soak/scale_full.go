//go:build soak_full

package soak

// requests is how many requests (or events) each pattern runs per backend in
// `make test-soak`.
const requests = 10_000

// drainRecords: the full run waits, at each sample, until streams' publish records (which
// expire a minute after their publish) are gone, so that used_memory is compared without them
// and without the room Redis keeps for their expiry.
const drainRecords = true
