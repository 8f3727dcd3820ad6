// Package faults drives real failures against every backend: consumer processes killed with
// SIGKILL mid-handler, Redis killed and restarted with AOF, a Redis Cluster losing a primary,
// a Sentinel-managed primary failed over, a least-privilege ACL user, TLS, and corrupt data at
// scale.
//
// The package holds only tests. `make test` runs a short variant of every scenario; `make
// test-faults` (build tag faults_full) runs them at full scale. Both print a table of what
// each scenario published, handled, duplicated and lost, and how fast it recovered.
package faults
