package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Parameters of the consumer-kill scenario. The workers run with the subscriber's default
// Prefetch, so one process holds at most killConcurrency+pubsub.PrefetchDefault leases.
const (
	killWorkers     = 4
	killConcurrency = 2
	killBacklog     = 500
	killLease       = 2 * time.Second
	killEvery       = 300 * time.Millisecond // ±100ms
)

// Consumers are killed with SIGKILL mid-handler, one at a time every ~300ms, and restarted,
// while a producer publishes. Every message must be handled and acked at least once, the
// group must end with nothing ready, pending or dead, and every duplicate must be explained
// by a kill: a message whose handler finished in a process that was then killed before its
// ack reached Redis is redelivered when the lease expires. The recovery time (kill to the
// redelivery of the killed process's in-flight messages) is measured per kill from the
// workers' logs.
//
// The backends run one after another, not in parallel: on a small machine, twelve worker
// processes starving each other could stall a live consumer's heartbeat past its 2s lease,
// and its messages would be redelivered for a reason that is not a kill.
func TestConsumersKilled(t *testing.T) {
	bin := buildWorker(t)
	server := redistest.Shared(t)
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			runConsumersKilled(t, bc, server, bin)
		})
	}
}

func runConsumersKilled(t *testing.T, bc backendCase, server *redistest.Server, bin string) {
	n := scale(10000, 50000)
	const batch = 100

	prefix := redistest.Prefix(t)
	topic := faultTopic()
	b, _ := newFaultBackend(t, bc, server.Client(t), prefix)
	pub, err := pubsub.NewPublisher(b, pubsub.PublisherConfig{}, faultLogger)
	require.NoError(t, err)

	fleet := newFleet(t, bin, []string{
		"-redis", server.URL(), "-backend", bc.name, "-prefix", prefix, "-topic", topic,
		"-lease", killLease.String(), "-concurrency", strconv.Itoa(killConcurrency), "-v",
	})
	for slot := range killWorkers {
		require.NoError(t, fleet.start(slot))
	}
	defer fleet.shutdown()

	// The producer keeps a backlog of at most killBacklog ready messages, so that the workers
	// are always busy and a kill nearly always lands mid-handler, while the driver kills;
	// killing stops when the last batch is stored, and the rest is recovery.
	published := make([]string, 0, n)
	fleet.startKilling()
	for len(published) < n {
		msgs := faultMessages(min(batch, n-len(published)))
		require.NoError(t, pub.Publish(topic, msgs...))
		for _, m := range msgs {
			published = append(published, m.UUID)
		}
		waitBacklogBelow(t, b, topic, killBacklog)
	}
	fleet.awaitAllHandled(t, published)
	st := waitSettled(t, b, topic)
	require.Zero(t, st.Dead, "dead letters: %+v", st)
	require.GreaterOrEqual(t, st.Counters.Acked, int64(n), "acked counter: %+v", st.Counters)

	fleet.shutdown()
	require.NoError(t, fleet.err(), "a worker failed to stop on SIGTERM")
	st = waitSettled(t, b, topic)
	require.Zero(t, st.Dead)
	logs, err := fleet.readLogs()
	require.NoError(t, err)

	// Duplicates: every handling but the last of a message must come from a process that was
	// killed. Each killed process can leave behind at most what it held: its in-flight
	// handlers plus the prefetch buffer (and acks queued for the acker, which only accumulate
	// while one Ack round trip is in flight).
	kills := fleet.kills()
	require.NotEmpty(t, kills, "the driver killed no consumer")
	unexplained := logs.unexplainedDuplicates(kills)
	if len(unexplained) > 0 {
		fleet.explain(logs, unexplained, kills)
	}
	require.Empty(t, unexplained, "%d duplicates not caused by a kill", len(unexplained))
	dups := logs.handled.duplicates()
	bound := len(kills) * (killConcurrency + pubsub.PrefetchDefault)
	require.LessOrEqual(t, dups, bound, "more duplicates than %d kills can cause", len(kills))

	// Recovery: from each kill to the moment the last of the killed process's in-flight
	// messages started again in another process.
	recoveries, err := logs.recoveries(kills)
	require.NoError(t, err)
	med, mx := medianMax(recoveries)
	t.Logf("%s: %d published, %d kills, %d duplicates (bound %d), recovery median %v max %v over %d kills with messages in flight",
		bc.name, n, len(kills), dups, bound, med, mx, len(recoveries))
	record(row{
		Scenario: "1 consumers killed", Backend: bc.name, Published: n,
		Handled: logs.handled.distinct(), Duplicates: dups, Lost: len(logs.handled.missing(published)),
		Recovery: med,
		Note: fmt.Sprintf("%d SIGKILLs, lease %v; recovery median of %d kills, max %v; duplicate bound %d",
			len(kills), killLease, len(recoveries), mx.Round(time.Millisecond), bound),
	})
}

// waitBacklogBelow waits until the default group of topic has fewer than n messages ready, so
// that a producer keeps the workers busy without running far ahead of them.
func waitBacklogBelow(t *testing.T, b backend.Backend, topic string, n int64) {
	t.Helper()
	for {
		st, err := b.Stats(context.Background(), &backend.StatsParams{Topic: topic, Group: backend.DefaultGroup})
		require.NoError(t, err)
		if st.Ready < n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitAllHandled stops the kills and waits until every published message was handled (its
// done line is in some worker's log).
func (f *fleet) awaitAllHandled(t *testing.T, published []string) {
	t.Helper()
	f.stopKilling()
	require.NoError(t, f.err(), "a worker exited by itself")
	var (
		logs *workerLogs
		err  error
	)
	ok := pollUntil(settleTimeout, func() bool {
		logs, err = f.readLogs()
		return err == nil && len(logs.handled.missing(published)) == 0
	})
	require.NoError(t, err)
	require.True(t, ok, "%d of %d messages never handled within %v, e.g. %v", len(logs.handled.missing(published)),
		len(published), settleTimeout, firstFew(logs.handled.missing(published), 5))
}

// buildWorker builds the worker program (internal/worker) into a temporary directory.
func buildWorker(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command is needed to build the worker program")
	bin := filepath.Join(t.TempDir(), "worker")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/relq/relq/faults/internal/worker").CombinedOutput()
	require.NoError(t, err, "go build worker: %s", out)
	return bin
}

// fleet runs killWorkers worker processes, one per slot, and kills and restarts them.
type fleet struct {
	t    *testing.T
	bin  string
	args []string
	dir  string

	killStop chan struct{}
	killDone chan struct{}
	stopOnce sync.Once
	killing  bool // startKilling was called (by the test goroutine, before stopKilling)

	mu      sync.Mutex
	procs   []*workerProc // by slot: the current incarnation
	all     []*workerProc // every incarnation
	killLog []killEvent
	failed  error
}

// workerProc is one incarnation of a worker: one process, one log file.
type workerProc struct {
	name    string // "w<slot>-<incarnation>"
	log     string
	stderr  string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	done    chan struct{}
	killed  bool // by the driver, with SIGKILL
	stopped bool // by shutdown, with SIGTERM
}

// killEvent is one SIGKILL: which incarnation, and when the signal was sent.
type killEvent struct {
	proc string
	at   time.Time
}

func newFleet(t *testing.T, bin string, args []string) *fleet {
	return &fleet{
		t: t, bin: bin, args: args, dir: t.TempDir(), procs: make([]*workerProc, killWorkers),
		killStop: make(chan struct{}), killDone: make(chan struct{}),
	}
}

// start launches a new incarnation in slot.
func (f *fleet) start(slot int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &workerProc{name: fmt.Sprintf("w%d-%d", slot, len(f.all)), done: make(chan struct{})}
	p.log = filepath.Join(f.dir, p.name+".log")
	p.stderr = filepath.Join(f.dir, p.name+".err")
	errFile, err := os.Create(p.stderr)
	if err != nil {
		return err
	}
	defer errFile.Close()
	p.cmd = exec.Command(f.bin, append(slices.Clone(f.args), "-log", p.log)...)
	p.cmd.Stderr = errFile
	// The worker exits when its stdin closes: if this test process dies, so do the workers.
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	go func() {
		err := p.cmd.Wait()
		f.mu.Lock()
		if !p.killed && f.failed == nil && (!p.stopped || err != nil) {
			msg, _ := os.ReadFile(p.stderr)
			f.failed = fmt.Errorf("worker %s exited (stopped by the test: %v): %v: %s", p.name, p.stopped, err, msg)
		}
		f.mu.Unlock()
		close(p.done)
	}()
	f.procs[slot] = p
	f.all = append(f.all, p)
	return nil
}

// startKilling starts the driver: it kills a random worker with SIGKILL every killEvery
// (±100ms) and starts a new one in its place, until stopKilling.
func (f *fleet) startKilling() {
	f.killing = true
	go func() {
		defer close(f.killDone)
		for {
			select {
			case <-f.killStop:
				return
			case <-time.After(killEvery - 100*time.Millisecond + rand.N(200*time.Millisecond)):
			}
			slot := rand.N(killWorkers)
			f.mu.Lock()
			p := f.procs[slot]
			p.killed = true
			at := time.Now()
			err := p.cmd.Process.Signal(syscall.SIGKILL)
			f.killLog = append(f.killLog, killEvent{proc: p.name, at: at})
			f.mu.Unlock()
			if err != nil {
				f.fail(fmt.Errorf("kill %s: %w", p.name, err))
				return
			}
			<-p.done
			if err := f.start(slot); err != nil {
				f.fail(fmt.Errorf("restart slot %d: %w", slot, err))
				return
			}
		}
	}()
}

// stopKilling stops the driver and waits for it. Idempotent; a no-op if it never started.
func (f *fleet) stopKilling() {
	f.stopOnce.Do(func() {
		close(f.killStop)
		if !f.killing {
			return
		}
		select {
		case <-f.killDone:
		case <-time.After(time.Minute):
			f.fail(errors.New("the kill driver did not stop"))
		}
	})
}

// shutdown stops every running worker with SIGTERM (a graceful close: handlers finish and
// acks are flushed) and waits for them. Idempotent.
func (f *fleet) shutdown() {
	f.stopKilling()
	f.mu.Lock()
	var running []*workerProc
	for _, p := range f.procs {
		if p != nil && !p.killed && !p.stopped {
			p.stopped = true
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			running = append(running, p)
		}
	}
	f.mu.Unlock()
	for _, p := range running {
		select {
		case <-p.done:
		case <-time.After(time.Minute):
			_ = p.cmd.Process.Kill()
			<-p.done
			f.fail(fmt.Errorf("worker %s did not stop within a minute of SIGTERM", p.name))
		}
	}
}

func (f *fleet) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = err
	}
}

func (f *fleet) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fleet) kills() []killEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.killLog)
}

// explain logs, for the first few unexplained duplicates, every handling of the message and
// what became of the processes involved, with the end of their stderr (the workers run with
// -v: relq logs lost leases and stale acks there).
func (f *fleet) explain(logs *workerLogs, unexplained []handling, kills []killEvent) {
	killedAt := make(map[string]time.Time, len(kills))
	for _, k := range kills {
		killedAt[k.proc] = k.at
	}
	procs := map[string]bool{}
	for _, u := range firstFew(unexplained, 3) {
		f.t.Logf("message %s was handled again after %s finished it:", u.uuid, u.proc)
		for _, h := range logs.dones[u.uuid] {
			k, killed := killedAt[h.proc]
			f.t.Logf("  done %s by %s, delivery %s attempt %d; process killed: %v %s",
				h.at.Format("15:04:05.000000"), h.proc, h.id, h.attempt, killed, k.Format("15:04:05.000000"))
			procs[h.proc] = true
		}
	}
	for name := range procs {
		out, _ := os.ReadFile(filepath.Join(f.dir, name+".err"))
		if len(out) > 4000 {
			out = out[len(out)-4000:]
		}
		f.t.Logf("stderr of %s:\n%s", name, out)
	}
}

// handling is one log line: a handler starting or finishing one delivery attempt.
type handling struct {
	proc    string
	at      time.Time
	id      string
	attempt int
	uuid    string
}

// workerLogs is every incarnation's log, parsed.
type workerLogs struct {
	handled *tally                // done lines per message UUID
	starts  map[string][]handling // start lines per delivery ID
	dones   map[string][]handling // done lines per message UUID, in log order per process
	byProc  map[string]*procLog
}

type procLog struct {
	starts map[string]handling // by "id/attempt"
	done   map[string]bool     // by "id/attempt"
}

func (f *fleet) readLogs() (*workerLogs, error) {
	f.mu.Lock()
	procs := slices.Clone(f.all)
	f.mu.Unlock()
	l := &workerLogs{handled: newTally(), starts: map[string][]handling{}, dones: map[string][]handling{}, byProc: map[string]*procLog{}}
	for _, p := range procs {
		pl := &procLog{starts: map[string]handling{}, done: map[string]bool{}}
		l.byProc[p.name] = pl
		file, err := os.Open(p.log)
		if os.IsNotExist(err) {
			continue // killed before it opened its log
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			line := sc.Text()
			fields := strings.Fields(line)
			if len(fields) != 5 {
				// A SIGKILL cannot tear a line (each is one write), so this is a bug.
				_ = file.Close()
				return nil, fmt.Errorf("%s: malformed line %q", p.log, line)
			}
			ns, err1 := strconv.ParseInt(fields[1], 10, 64)
			attempt, err2 := strconv.Atoi(fields[3])
			if err1 != nil || err2 != nil {
				_ = file.Close()
				return nil, fmt.Errorf("%s: malformed line %q", p.log, line)
			}
			h := handling{proc: p.name, at: time.Unix(0, ns), id: fields[2], attempt: attempt, uuid: fields[4]}
			key := h.id + "/" + fields[3]
			switch fields[0] {
			case "start":
				pl.starts[key] = h
				l.starts[h.id] = append(l.starts[h.id], h)
			case "done":
				pl.done[key] = true
				l.dones[h.uuid] = append(l.dones[h.uuid], h)
				l.handled.add(h.uuid)
			}
		}
		err = sc.Err()
		_ = file.Close()
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// unexplainedDuplicates returns the handlings that were repeated later although their
// process was never killed: every handling of a message but the last must come from a
// killed process. (Its log line may be stamped a little after the kill was recorded: the
// signal takes a moment to land, and whatever the process wrote was written before it died.)
func (l *workerLogs) unexplainedDuplicates(kills []killEvent) []handling {
	killedAt := make(map[string]time.Time, len(kills))
	for _, k := range kills {
		killedAt[k.proc] = k.at
	}
	var out []handling
	for _, hs := range l.dones {
		if len(hs) < 2 {
			continue
		}
		hs = slices.Clone(hs)
		slices.SortFunc(hs, func(a, b handling) int { return a.at.Compare(b.at) })
		for _, h := range hs[:len(hs)-1] {
			if _, ok := killedAt[h.proc]; !ok {
				out = append(out, h)
			}
		}
	}
	return out
}

// recoveries returns, for each kill of a process that had handlers in flight (a start line
// without its done line), the time from the kill to the moment the last of those deliveries
// started in another process. It fails if one never did.
func (l *workerLogs) recoveries(kills []killEvent) ([]time.Duration, error) {
	var out []time.Duration
	for _, k := range kills {
		pl := l.byProc[k.proc]
		if pl == nil {
			continue
		}
		var worst time.Duration
		inFlight := 0
		for key, s := range pl.starts {
			if pl.done[key] {
				continue
			}
			inFlight++
			var next time.Time
			for _, h := range l.starts[s.id] {
				if h.proc != k.proc && h.at.After(k.at) && (next.IsZero() || h.at.Before(next)) {
					next = h.at
				}
			}
			if next.IsZero() {
				return nil, fmt.Errorf("delivery %s, in flight in %s when it was killed, was never redelivered", s.id, k.proc)
			}
			worst = max(worst, next.Sub(k.at))
		}
		if inFlight > 0 {
			out = append(out, worst)
		}
	}
	return out, nil
}
