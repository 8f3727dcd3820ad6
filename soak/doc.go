// Package soak holds relq's memory soak: Watermill's own components (CQRS with an event type
// no handler subscribes to, and request-reply with one shared reply topic or one reply topic
// per request) run for many requests on each backend, while the test watches Redis's key count
// and used_memory. Both must stay flat after a warm-up: nothing relq stores for these patterns
// may grow with the number of requests (issue 13's lifecycle rules: the bounded backlog,
// ephemeral groups, topics that leave no keys).
//
// `make test` runs a short variant; `make test-soak` runs 10,000 requests per pattern and
// backend and prints the table kept in docs/operations.md.
package soak
