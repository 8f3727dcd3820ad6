//go:build !faults_full

package faults

// full is false in the short variant that `make test` runs.
const full = false
