package benchmarks

import (
	"io"
	"time"
)

// Defaults of Config: the full run of `relq bench`, about three minutes on two cores.
const (
	PayloadBytesDefault      = 100
	PublishMessagesDefault   = 5_000
	BatchMessagesDefault     = 20_000
	BatchSizeDefault         = 100
	EndToEndMessagesDefault  = 20_000
	LatencyMessagesDefault   = 2_000
	LatencyRateDefault       = 500
	DelayMessagesDefault     = 10_000
	DelaySpreadDefault       = 2500 * time.Millisecond
	RecoveryLeaseDefault     = time.Second
	MemoryMessagesDefault    = 100_000
	IdleWindowDefault        = 5 * time.Second
	ReferenceRequestsDefault = 200_000
)

// EndToEndSubscribersDefault are the subscriber counts of the end-to-end measurement.
var EndToEndSubscribersDefault = []int{1, 4, 16}

// Config sizes a run. Zero fields take their defaults (WithDefaults).
type Config struct {
	// PayloadBytes is the size of every message's payload. Defaults to 100.
	PayloadBytes int `json:"payload_bytes"`
	// PublishMessages are published one per Publish call. Defaults to 5,000.
	PublishMessages int `json:"publish_messages"`
	// BatchMessages are published BatchSize per Publish call. Defaults to 20,000.
	BatchMessages int `json:"batch_messages"`
	// BatchSize is the messages of one batched Publish call. Defaults to 100.
	BatchSize int `json:"batch_size"`
	// EndToEndMessages are pre-filled, then consumed, for each subscriber count; and again
	// published while the subscribers consume. Defaults to 20,000.
	EndToEndMessages int `json:"end_to_end_messages"`
	// EndToEndSubscribers are the subscriber counts, all in one consumer group.
	// Defaults to 1, 4 and 16.
	EndToEndSubscribers []int `json:"end_to_end_subscribers"`
	// LatencyMessages are published one at a time at LatencyRate per second to an idle
	// subscriber. Default to 2,000 at 500/s.
	LatencyMessages int `json:"latency_messages"`
	LatencyRate     int `json:"latency_rate"`
	// DelayMessages get delays uniform in [0, DelaySpread], for backends with OnTimeDelay.
	// Default to 10,000 over 2.5s.
	DelayMessages int           `json:"delay_messages"`
	DelaySpread   time.Duration `json:"delay_spread_ns"`
	// RecoveryLease is the lease of the consumer that dies (for the baseline: the live
	// subscriber's MaxIdleTime, its equivalent). Defaults to 1s.
	RecoveryLease time.Duration `json:"recovery_lease_ns"`
	// RecoveryScan, when set, is how often the live subscriber looks for expired messages
	// (relq ReclaimInterval, redisstream ClaimInterval). Zero keeps each library's default
	// (relq: Lease/2 = 15s; redisstream: 5s), which is what a user gets.
	RecoveryScan time.Duration `json:"recovery_scan_ns"`
	// MemoryMessages are queued to read INFO used_memory before and after. Defaults to 100,000.
	MemoryMessages int `json:"memory_messages"`
	// IdleWindow is how long the idle subscriber's commands are counted. Defaults to 5s.
	IdleWindow time.Duration `json:"idle_window_ns"`
	// ReferenceRequests is redis-benchmark's -n. Defaults to 200,000.
	ReferenceRequests int `json:"reference_requests"`
	// RedisBenchmark is the path of redis-benchmark; empty skips the reference.
	RedisBenchmark string `json:"-"`
	// Progress receives one line per step while the run goes; nil discards them.
	Progress io.Writer `json:"-"`
}

// QuickConfig is a small run for tests: seconds, not minutes, and too small for figures
// worth quoting.
func QuickConfig() Config {
	return Config{
		PublishMessages:   300,
		BatchMessages:     1_000,
		EndToEndMessages:  1_000,
		LatencyMessages:   100,
		LatencyRate:       500,
		DelayMessages:     300,
		DelaySpread:       300 * time.Millisecond,
		RecoveryLease:     300 * time.Millisecond,
		RecoveryScan:      100 * time.Millisecond,
		MemoryMessages:    2_000,
		IdleWindow:        time.Second,
		ReferenceRequests: 20_000,
	}
}

// WithDefaults returns a copy with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.PayloadBytes, PayloadBytesDefault)
	def(&c.PublishMessages, PublishMessagesDefault)
	def(&c.BatchMessages, BatchMessagesDefault)
	def(&c.BatchSize, BatchSizeDefault)
	def(&c.EndToEndMessages, EndToEndMessagesDefault)
	if len(c.EndToEndSubscribers) == 0 {
		c.EndToEndSubscribers = EndToEndSubscribersDefault
	}
	def(&c.LatencyMessages, LatencyMessagesDefault)
	def(&c.LatencyRate, LatencyRateDefault)
	def(&c.DelayMessages, DelayMessagesDefault)
	defDur(&c.DelaySpread, DelaySpreadDefault)
	defDur(&c.RecoveryLease, RecoveryLeaseDefault)
	def(&c.MemoryMessages, MemoryMessagesDefault)
	defDur(&c.IdleWindow, IdleWindowDefault)
	def(&c.ReferenceRequests, ReferenceRequestsDefault)
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}
