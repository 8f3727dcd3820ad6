// Package adaptertest holds the test helpers the adapters' tests share: an Env for the
// state-based tests (a backend under a key prefix of its own on the shared server, with
// helpers that call it and read the Redis state it leaves), and the runs that are the same for
// every adapter but for its constructor: the conformance Factory, Watermill's suite, the
// replica wait and the name checks.
//
// It is imported by _test files only; it is not a _test package so that the three adapters'
// tests can share it.
package adaptertest
