// Package doccheck holds no code, only tests that keep the docs' feature tables in step with
// what the backends declare in code: the per-backend tables of docs/characteristics.md, and
// the capability rows of docs/concepts.md and docs/choosing-a-backend.md.
//
// The code side is read, never restated: backend.Capabilities from each backend's
// Capabilities() (every field, found by reflection, so a new field needs a new row), the
// Watermill tests.Features each adapter passes to Watermill's suite (parsed from its
// *_test.go files), and whether the backend implements backend.ReplicaWaiter. A table row
// names a flag in backticks (`FIFO`) and says yes or no; the test fails on a cell that
// disagrees, a flag without a row, or a backticked row that names no flag.
package doccheck
