package backend

import (
	"context"
	"fmt"
	"strings"
)

// EvictionReader is implemented by backends that can read how their Redis evicts keys when it
// is full. A Subscriber reads it once, in the background after its first group registration,
// and logs an error when the policy can delete queue keys; the relq CLI and the metrics collector report it too.
type EvictionReader interface {
	Eviction(ctx context.Context) (Eviction, error)
}

// Eviction is what Redis reports about evicting keys (INFO: maxmemory_policy, evicted_keys).
type Eviction struct {
	// Policy is Redis's maxmemory-policy; "" when unknown (INFO refused, by ACLs for example).
	Policy string
	// EvictedKeys counts the keys Redis evicted since it started; -1 when unknown.
	EvictedKeys int64
}

// DropsQueueKeys reports a policy under which a full Redis deletes relq's queue keys: every
// allkeys-* policy. A volatile-* policy evicts only keys with a TTL, and relq gives one only to
// keys that hold no message (zset's wake-up tokens, streams' publish resend records, the
// idempotency middleware's markers); noeviction refuses writes instead (ErrRedisFull).
func (e Eviction) DropsQueueKeys() bool {
	return strings.HasPrefix(e.Policy, "allkeys-")
}

// Err explains the risk of a policy that drops queue keys; nil for any other policy, or an
// unknown one.
func (e Eviction) Err() error {
	if !e.DropsQueueKeys() {
		return nil
	}
	return fmt.Errorf("relq: Redis maxmemory-policy is %s: when Redis is full it evicts keys, relq's queue keys "+
		"among them, and the messages in them are lost without any error; set maxmemory-policy noeviction", e.Policy)
}
