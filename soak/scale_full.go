//go:build soak_full

package soak

// requests is how many requests (or events) each pattern runs per backend in
// `make test-soak`.
const requests = 10_000

// churnCycles is how many Subscribe/cancel cycles the churn test runs per backend in
// `make test-soak`.
const churnCycles = 10_000
