// Package web is relq's dashboard: an http.Handler that shows, in a browser, what the relq
// backends keep in Redis (topics and groups with their counts, ages and live rates; a
// group's consumers and messages by state; one message whole; dead letters grouped by
// reason) and lets an operator act on it (pause and resume a group, requeue, run or delete a
// message, requeue or purge dead letters, delete a group or a topic).
//
// It is built on backend.Admin only, so it shows any backend that implements it, and it is
// what `relq web` serves. An application mounts it under any path prefix of its own server,
// behind its own authentication:
//
//	h, err := web.New(web.Options{Backends: []web.Backend{{Name: "list", Admin: backend}}})
//	mux.Handle("/relq/", requireStaff(http.StripPrefix("/relq", h)))
//
// Every page links relatively, so no prefix needs configuring. Every change is a POST that
// carries a CSRF token and passes Go's cross-origin protection; a destructive one (a delete,
// a purge, requeueing all dead letters) first shows what it will remove and asks to confirm;
// Options.ReadOnly refuses them all. Each page load costs a bounded number of Redis commands:
// listings are paged, and the topics are discovered by a SCAN that a page load starts in the
// background when the last one is older than Options.DiscoverEvery (or a delete made it
// stale) and does not wait for, but for the very first one and an explicit rescan. The pages
// need no JavaScript to work; a small embedded script (no third-party code) adds the live
// rates and charts.
package web
