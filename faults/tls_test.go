package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// Redis serves TLS only, with certificates the test generates (a CA, a server certificate,
// and a client certificate that tls-auth-clients requires). Every backend makes a publish,
// subscribe and ack round trip over it, blocking claims included; a plaintext client and a
// TLS client without a certificate are refused.
func TestTLSRoundTrip(t *testing.T) {
	t.Parallel()
	server := redistest.Start(t, redistest.Options{TLS: &redistest.TLSOptions{AuthClients: "yes"}})
	ctx := context.Background()

	plain := redis.NewClient(&redis.Options{Addr: server.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer plain.Close()
	require.Error(t, plain.Ping(ctx).Err(), "a plaintext client got an answer")

	noCert := server.ClientTLS()
	noCert.Certificates = nil
	anon := redis.NewClient(&redis.Options{Addr: server.Addr(), TLSConfig: noCert, MaxRetries: -1, DialTimeout: time.Second})
	defer anon.Close()
	require.Error(t, anon.Ping(ctx).Err(), "a client without a certificate got an answer")

	const topics, perTopic = 3, 100
	for _, bc := range faultBackends {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := newFaultBackend(t, bc, server.Client(t), redistest.Prefix(t))
			names := make([]string, topics)
			for i := range names {
				names[i] = faultTopic()
			}
			start := time.Now()
			handled, dups := roundTrip(t, b, pubsub.PublisherConfig{}, names, perTopic)
			record(row{
				Scenario: "5 TLS round trip", Backend: bc.name, Published: topics * perTopic,
				Handled: handled, Duplicates: dups, Lost: topics*perTopic - handled,
				Note: fmt.Sprintf("TLS only (port 0), client certificate required; %d topics in %v",
					topics, time.Since(start).Round(time.Millisecond)),
			})
		})
	}
}
