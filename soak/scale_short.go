//go:build !soak_full

package soak

// requests is how many requests (or events) each pattern runs per backend in `make test`.
const requests = 1000
