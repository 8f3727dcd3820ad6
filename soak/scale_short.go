//go:build !soak_full

package soak

// requests is how many requests (or events) each pattern runs per backend in `make test`.
const requests = 1000

// drainRecords: the short run samples with streams' publish records still there (counted
// apart, their memory taken off), since waiting a minute for them to expire would double the
// run; the full run waits (see settle).
const drainRecords = false
