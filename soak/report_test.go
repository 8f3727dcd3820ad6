package soak

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// result is one pattern's run on one backend.
type result struct {
	pattern, backend string
	requests         int
	warm, end        snapshot
	took             time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%s on %s: %d requests in %s; after %d and %d requests: keys %d -> %d (%s -> %s), "+
		"used_memory %s -> %s",
		r.pattern, r.backend, r.requests, r.took.Round(time.Millisecond), r.requests/5, r.requests,
		r.warm.keys, r.end.keys, kib(r.warm.keyBytes), kib(r.end.keyBytes), kib(r.warm.memory), kib(r.end.memory))
}

var (
	resultsMu sync.Mutex
	results   []result
)

func record(r result) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	results = append(results, r)
}

// printTable prints the results as the Markdown table docs/operations.md keeps.
func printTable(w io.Writer) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	sort.Slice(results, func(i, j int) bool {
		if results[i].pattern != results[j].pattern {
			return results[i].pattern < results[j].pattern
		}
		return results[i].backend < results[j].backend
	})
	w1, w2 := results[0].requests/5, results[0].requests
	fmt.Fprintf(w, "\n| pattern | backend | keys after %d → %d | their memory | used_memory | took |\n", w1, w2)
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %s | %d → %d | %s → %s | %s → %s | %s |\n", r.pattern, r.backend,
			r.warm.keys, r.end.keys, kib(r.warm.keyBytes), kib(r.end.keyBytes), kib(r.warm.memory), kib(r.end.memory),
			r.took.Round(time.Second))
	}
}

func kib(n int64) string { return fmt.Sprintf("%.0f KiB", float64(n)/1024) }
