package faults

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// row is one line of the scenario table.
type row struct {
	Scenario   string
	Backend    string
	Published  int
	Handled    int // distinct messages handled (acked at least once)
	Duplicates int // extra deliveries beyond the first
	Lost       int // published (Publish returned nil) but never handled
	Recovery   time.Duration
	Note       string
}

var (
	reportMu sync.Mutex
	report   []row
)

// record adds a row to the table printed when the package's tests end.
func record(r row) {
	reportMu.Lock()
	defer reportMu.Unlock()
	report = append(report, r)
}

// printReport writes the table, sorted by scenario and backend.
func printReport(w io.Writer) {
	reportMu.Lock()
	defer reportMu.Unlock()
	if len(report) == 0 {
		return
	}
	sort.SliceStable(report, func(i, j int) bool {
		if report[i].Scenario != report[j].Scenario {
			return report[i].Scenario < report[j].Scenario
		}
		return report[i].Backend < report[j].Backend
	})
	fmt.Fprintln(w, "\nfault scenarios:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| scenario\t| backend\t| published\t| handled\t| duplicates\t| lost\t| recovery\t| note\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, r := range report {
		rec := "-"
		if r.Recovery > 0 {
			rec = r.Recovery.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %d\t| %d\t| %d\t| %d\t| %s\t| %s\t|\n", r.Scenario, r.Backend,
			r.Published, r.Handled, r.Duplicates, r.Lost, rec, strings.ReplaceAll(r.Note, "|", "/"))
	}
	_ = tw.Flush()
}
