//go:build !soak_full

package soak

// requests is how many requests (or events) each pattern runs per backend in `make test`.
const requests = 1000

// churnCycles is how many Subscribe/cancel cycles the churn test runs per backend in
// `make test`.
const churnCycles = 1000
