package list_test

import (
	"testing"

	"github.com/relq/relq/internal/adaptertest"
)

// TestManySubscriptions: 200 idle subscriptions of one Subscriber on a client with go-redis's
// default pool all block in their claims, register and deliver without any call waiting for
// a pooled connection.
func TestManySubscriptions(t *testing.T) { adaptertest.ManySubscriptions(t, build) }

// BenchmarkPickup200: publish to one of 200 idle subscriptions, receive, ack.
func BenchmarkPickup200(b *testing.B) { adaptertest.BenchmarkPickup(b, build) }
