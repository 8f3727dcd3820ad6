package list_test

import (
	"testing"

	"github.com/relq/relq/internal/adaptertest"
)

// TestManySubscriptions: 200 idle subscriptions of one Subscriber on a client with go-redis's
// default pool all block in their claims, register and deliver without any call waiting for
// a pooled connection.
func TestManySubscriptions(t *testing.T) { adaptertest.ManySubscriptions(t, build) }

// TestStopEndsBlockedClaim: cancelling a subscription blocked in its claim, or closing its
// Subscriber, stops it at once, not at the end of Block, and leaves no pooled connection in
// use.
func TestStopEndsBlockedClaim(t *testing.T) {
	adaptertest.StopEndsBlockedClaim(t, build)
}

// TestRequestReply: 200 sequential Watermill request-reply round trips, a Subscriber per
// request, on go-redis's default pool: no call waits for a pooled connection.
func TestRequestReply(t *testing.T) { adaptertest.RequestReply(t, build) }

// BenchmarkPickup200: publish to one of 200 idle subscriptions, receive, ack.
func BenchmarkPickup200(b *testing.B) { adaptertest.BenchmarkPickup(b, build) }
