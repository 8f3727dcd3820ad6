package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// EnvURL names the environment variable that points the tests at an existing server.
const EnvURL = "RELQ_TEST_REDIS_URL"

var (
	sharedOnce   sync.Once
	sharedServer *Server
	sharedErr    error
	sharedDir    string
)

// Shared returns the test binary's shared server, started on first use (or the server of
// RELQ_TEST_REDIS_URL). Tests on it isolate themselves with Prefix and never FLUSHDB.
func Shared(t testing.TB) *Server {
	t.Helper()
	s, err := shared()
	if err != nil {
		t.Fatalf("redistest: shared server: %v", err)
	}
	return s
}

// SharedURL returns the URL of the shared server, for runnable examples, which have no
// testing.TB. It panics when no server can be started, which fails the example.
func SharedURL() string {
	s, err := shared()
	if err != nil {
		panic("redistest: shared server: " + err.Error())
	}
	return s.URL()
}

func shared() (*Server, error) {
	sharedOnce.Do(func() {
		if url := os.Getenv(EnvURL); url != "" {
			sharedServer = &Server{url: url, external: true}
			return
		}
		sharedDir, sharedErr = os.MkdirTemp("", "relq-redistest-*")
		if sharedErr != nil {
			return
		}
		sharedServer, sharedErr = start(sharedDir, Options{})
	})
	return sharedServer, sharedErr
}

// Prefix returns a key prefix unique to this test, so tests can share a server and run in
// parallel.
func Prefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_", "{", "", "}", "", "*", "", "?", "", "[", "", "]", "", ":", "-").Replace(t.Name())
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return fmt.Sprintf("relqtest-%s-%s", name, hex.EncodeToString(b[:]))
}

// Main runs a test package: the tests, then each after function (a report, say), then it
// stops the shared server and fails the run if goroutines leaked. Call it from TestMain.
func Main(m *testing.M, after ...func()) {
	before := goleak.IgnoreCurrent() // the runtime's and the test binary's own goroutines
	code := m.Run()
	for _, f := range after {
		f()
	}
	if sharedServer != nil && !sharedServer.external {
		_ = sharedServer.Stop()
		_ = os.RemoveAll(sharedDir)
	}
	if code == 0 {
		if err := goleak.Find(append([]goleak.Option{before}, watermillSuite...)...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// watermillSuite ignores goroutines that third-party code the tests drive leaves behind in
// its own functions: Watermill's universal test suite (TestPubSub), whose subscriber
// multiplier's fan-out stays blocked on channels nobody reads once a test has what it
// wanted, watermill-redisstream (the benchmarks' baseline), whose read loop sleeps out
// its retry delay after Close, and go-redis, whose pool redials a server that went away
// (a killed Cluster primary) once a second and notices the client's Close only then.
var watermillSuite = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/internal/subscriber.(*multiplier).Subscribe.func2"),
	goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/internal/subscriber.(*multiplier).Subscribe.func3"),
	goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream.(*Subscriber).read"),
	goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
}
