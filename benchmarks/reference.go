package benchmarks

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// referenceKey is the list redis-benchmark's LPUSH test writes to.
const referenceKey = "mylist"

// Reference is the physical reference: what Redis itself does on this server.
type Reference struct {
	// LPUSHPerSec is redis-benchmark's LPUSH rate, the one targets are judged on; nil when
	// it did not run. In a Report it is the median of Runs (for two runs, their mean).
	LPUSHPerSec *float64 `json:"lpush_per_sec"`
	// Runs are the rates of each run, in order: in a Report, the run before the interleaved
	// rounds and the one after them.
	Runs []float64 `json:"lpush_per_sec_runs,omitempty"`
	// Command is the command line that ran (without a password).
	Command string `json:"command"`
	// Note says why the reference is missing, when it is.
	Note string `json:"note,omitempty"`
}

var rpsPattern = regexp.MustCompile(`(?i)LPUSH:\s*([0-9.]+)\s+requests per second`)

// MeasureReference runs `redis-benchmark -P 16 -t lpush -n ReferenceRequests -q` against the
// client's server. It writes the key "mylist", so it refuses (with a note) when that key
// exists, and deletes it afterwards.
func MeasureReference(ctx context.Context, c *redis.Client, cfg Config) (Reference, error) {
	cfg = cfg.WithDefaults()
	if cfg.RedisBenchmark == "" {
		return Reference{Note: "redis-benchmark not found on PATH: no reference"}, nil
	}
	opts := c.Options()
	if opts.TLSConfig != nil {
		return Reference{Note: "the server uses TLS: redis-benchmark not run"}, nil
	}
	host, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return Reference{Note: fmt.Sprintf("cannot read the server address %q: %v", opts.Addr, err)}, nil
	}
	if n, err := c.Exists(ctx, referenceKey).Result(); err != nil {
		return Reference{}, err
	} else if n > 0 {
		return Reference{Note: fmt.Sprintf("key %q exists on the server: redis-benchmark (which writes it) not run", referenceKey)}, nil
	}
	args := []string{"-h", host, "-p", port, "-P", "16", "-t", "lpush", "-n", strconv.Itoa(cfg.ReferenceRequests), "-q"}
	if opts.DB != 0 {
		args = append(args, "--dbnum", strconv.Itoa(opts.DB))
	}
	shown := cfg.RedisBenchmark + " " + strings.Join(args, " ")
	if opts.Username != "" {
		args = append(args, "--user", opts.Username)
	}
	if opts.Password != "" {
		args = append(args, "-a", opts.Password)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, cfg.RedisBenchmark, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	_ = c.Unlink(context.WithoutCancel(ctx), referenceKey).Err()
	if err != nil {
		return Reference{}, fmt.Errorf("%s: %w\n%s", shown, err, out.String())
	}
	// -q prints carriage-return progress lines before the result.
	m := rpsPattern.FindStringSubmatch(out.String())
	if m == nil {
		return Reference{}, fmt.Errorf("%s: no LPUSH rate in its output:\n%s", shown, out.String())
	}
	rate, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return Reference{}, err
	}
	return Reference{LPUSHPerSec: &rate, Runs: []float64{rate}, Command: shown}, nil
}

// combineReferences merges runs of the reference taken at different times (Run: before and
// after the rounds) into one whose rate is the median of theirs: for two runs, their mean.
// The machine drifts between them, and the rounds whose batch publish is compared with the
// reference lie between them, so the mean is the best guess of the reference over those
// rounds. The lower of the two would flatter relq by the very drift the rounds are there to
// remove (and the higher would penalise it as much). Runs that did not happen (a note) are
// left out; when none ran, the result has no rate and the notes.
func combineReferences(refs ...Reference) Reference {
	var out Reference
	var notes []string
	for _, r := range refs {
		if r.LPUSHPerSec == nil {
			if r.Note != "" && !slices.Contains(notes, r.Note) {
				notes = append(notes, r.Note)
			}
			continue
		}
		out.Runs = append(out.Runs, *r.LPUSHPerSec)
		if out.Command == "" {
			out.Command = r.Command
		}
	}
	out.Note = strings.Join(notes, "; ")
	if len(out.Runs) > 0 {
		m := median(out.Runs)
		out.LPUSHPerSec = &m
	}
	return out
}
