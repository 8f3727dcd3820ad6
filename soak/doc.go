// Package soak holds relq's memory soak: Watermill's own components (CQRS with an event type
// no handler subscribes to, and request-reply with one shared reply topic or one reply topic
// per request) run for many requests on each backend, while the test watches Redis's key count
// and used_memory. Both must stay flat after a warm-up: nothing relq stores for these patterns
// may grow with the number of requests (issue 13's lifecycle rules: the bounded backlog,
// ephemeral groups, topics that leave no keys).
//
// The churn test runs Subscribe/cancel cycles with ephemeral groups and watches the process
// instead: its heap after GC, its goroutines, and Redis's key count (docs/reliability.md,
// "Subscriptions that come and go").
//
// `make test` runs a short variant of both (1,000 requests, 1,000 cycles); `make test-soak`
// runs 10,000 requests per pattern and backend and 10,000 cycles per backend, and prints the
// tables kept in docs/operations.md and docs/reliability.md.
package soak
