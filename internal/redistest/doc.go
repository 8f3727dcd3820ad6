// Package redistest starts private redis-server processes for tests.
//
// Start launches a server on a free loopback port in a temporary directory; Shared returns one
// server per test binary, for the many tests that only need isolation by key prefix (Prefix).
// A Server can be stopped, killed with SIGKILL and started again with its data, which the
// failure tests use. RELQ_TEST_REDIS_URL points Shared at an existing server instead; Start
// always launches a private server, since the tests that call it stop or restart Redis.
//
// StartCluster starts a real Redis Cluster (primaries with replicas) on loopback ports;
// StartSentinel starts a primary with replicas watched by Redis Sentinel processes, for
// failover through redis.NewFailoverClient;
// Options.TLS starts a TLS-only server with certificates generated for the test; AddUser and
// ClientAs create and connect as a Redis ACL user, for least-privilege tests.
//
// Test packages call Main from TestMain: it runs the tests, stops the shared server and checks
// for leaked goroutines.
package redistest
