//go:build faults_full

package faults

// full is true under the faults_full build tag (`make test-faults`).
const full = true
