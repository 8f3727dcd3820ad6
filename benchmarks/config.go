package benchmarks

import (
	"io"
	"time"
)

// Defaults of Config: the full run of `relq bench`, three minutes on an idle two-core
// machine (up to about six when it is busy), half of it the three interleaved rounds and a
// sixth the scale phase (skip it with SkipScale). A round measures each round figure once
// per target: about 28 s there, two thirds of it the six end-to-end figures, hence 10,000
// messages for those (20,000 before rounds existed); the figures that targets judge keep
// their sizes (5,000 one per call; 20,000 batched, from 16 goroutines, consumed).
const (
	RoundsDefault            = 3
	PayloadBytesDefault      = 100
	PublishMessagesDefault   = 5_000
	BatchMessagesDefault     = 20_000
	BatchSizeDefault         = 100
	EndToEndMessagesDefault  = 10_000
	LatencyMessagesDefault   = 2_000
	LatencyRateDefault       = 500
	DelayMessagesDefault     = 10_000
	DelaySpreadDefault       = 2500 * time.Millisecond
	RetryRoundsDefault       = 100
	RetryDelayDefault        = 100 * time.Millisecond
	RetryGapDefault          = 400 * time.Millisecond
	RecoveryLeaseDefault     = time.Second
	MemoryMessagesDefault    = 100_000
	IdleWindowDefault        = 5 * time.Second
	ReferenceRequestsDefault = 200_000

	PublishConcurrentMessagesDefault = 20_000
	PublishGoroutinesDefault         = 16
	ConsumeMessagesDefault           = 20_000
	ConsumeSubscribersDefault        = 4
	ConsumeConcurrencyDefault        = 8
	ScaleInFlightDefault             = 100_000
	ScaleDelayedDefault              = 1_000_000
	ScaleDeadLettersDefault          = 100_000
	ScaleTopicsDefault               = 10_000
	ScaleRoundsDefault               = 3
	PriorityBacklogDefault           = 100_000
)

// EndToEndSubscribersDefault are the subscriber counts of the end-to-end measurement.
var EndToEndSubscribersDefault = []int{1, 4, 16}

// Config sizes a run. Zero fields take their defaults (WithDefaults).
type Config struct {
	// Rounds is how many interleaved rounds measure the figures that feed ratios and targets
	// (publish, consume+ack, end-to-end, with their Redis costs): each round measures one
	// figure for every target back to back, in an order that rotates from round to round;
	// the report gives each figure's median and every round's value. Defaults to 3.
	Rounds int `json:"rounds"`
	// PayloadBytes is the size of every message's payload. Defaults to 100.
	PayloadBytes int `json:"payload_bytes"`
	// PublishMessages are published one per Publish call. Defaults to 5,000.
	PublishMessages int `json:"publish_messages"`
	// BatchMessages are published BatchSize per Publish call. Defaults to 20,000.
	BatchMessages int `json:"batch_messages"`
	// BatchSize is the messages of one batched Publish call. Defaults to 100.
	BatchSize int `json:"batch_size"`
	// EndToEndMessages are pre-filled, then consumed, for each subscriber count; and again
	// published while the subscribers consume. Defaults to 10,000 (per round).
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
	// RetryRounds messages are nacked with RetryDelay, one at a time, rounds a random pause
	// in [0, RetryGap) apart, while the subscriber is idle (MeasureRetryLateness). Default to
	// 100, 100ms and 400ms.
	RetryRounds int           `json:"retry_rounds"`
	RetryDelay  time.Duration `json:"retry_delay_ns"`
	RetryGap    time.Duration `json:"retry_gap_ns"`
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
	// PublishConcurrentMessages are published one per Publish call by PublishGoroutines
	// goroutines sharing one Publisher. Default to 20,000 and 16.
	PublishConcurrentMessages int `json:"publish_concurrent_messages"`
	PublishGoroutines         int `json:"publish_goroutines"`
	// ConsumeMessages are pre-filled, then consumed and acked by ConsumeSubscribers
	// subscribers in one group, to read what consuming costs Redis. relq subscribers run
	// ConsumeConcurrency handlers each; redisstream has one message in flight per subscriber.
	// Default to 20,000, 4 and 8.
	ConsumeMessages    int `json:"consume_messages"`
	ConsumeSubscribers int `json:"consume_subscribers"`
	ConsumeConcurrency int `json:"consume_concurrency"`
	// SkipScale leaves out the scale phase (relq backends only): ScaleInFlight messages
	// claimed and held, ScaleDelayed delayed for hours, ScaleDeadLetters dead letters and
	// ScaleTopics topics with a group, then every hot or periodic path runs ScaleRounds times
	// under SLOWLOG. Default to 100,000, 1,000,000, 100,000, 10,000 and 3.
	SkipScale        bool `json:"skip_scale"`
	ScaleInFlight    int  `json:"scale_in_flight"`
	ScaleDelayed     int  `json:"scale_delayed"`
	ScaleDeadLetters int  `json:"scale_dead_letters"`
	ScaleTopics      int  `json:"scale_topics"`
	ScaleRounds      int  `json:"scale_rounds"`
	// PriorityBacklog is the backlog of due messages a high-priority one must overtake
	// (backends with Capabilities.Priorities). Defaults to 100,000.
	PriorityBacklog int `json:"priority_backlog"`
	// RedisBenchmark is the path of redis-benchmark; empty skips the reference.
	RedisBenchmark string `json:"-"`
	// Progress receives one line per step while the run goes; nil discards them.
	Progress io.Writer `json:"-"`
}

// QuickConfig is a small run for tests: seconds, not minutes, and too small for figures
// worth quoting.
func QuickConfig() Config {
	return Config{
		Rounds:            1,
		PublishMessages:   300,
		BatchMessages:     1_000,
		EndToEndMessages:  1_000,
		LatencyMessages:   100,
		LatencyRate:       500,
		DelayMessages:     300,
		DelaySpread:       300 * time.Millisecond,
		RetryRounds:       10,
		RecoveryLease:     300 * time.Millisecond,
		RecoveryScan:      100 * time.Millisecond,
		MemoryMessages:    2_000,
		IdleWindow:        time.Second,
		ReferenceRequests: 20_000,

		PublishConcurrentMessages: 1_000,
		ConsumeMessages:           1_000,
		ScaleInFlight:             1_000,
		ScaleDelayed:              5_000,
		ScaleDeadLetters:          1_000,
		ScaleTopics:               100,
		ScaleRounds:               1,
		PriorityBacklog:           2_000,
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
	def(&c.Rounds, RoundsDefault)
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
	def(&c.RetryRounds, RetryRoundsDefault)
	defDur(&c.RetryDelay, RetryDelayDefault)
	defDur(&c.RetryGap, RetryGapDefault)
	defDur(&c.RecoveryLease, RecoveryLeaseDefault)
	def(&c.MemoryMessages, MemoryMessagesDefault)
	defDur(&c.IdleWindow, IdleWindowDefault)
	def(&c.ReferenceRequests, ReferenceRequestsDefault)
	def(&c.PublishConcurrentMessages, PublishConcurrentMessagesDefault)
	def(&c.PublishGoroutines, PublishGoroutinesDefault)
	def(&c.ConsumeMessages, ConsumeMessagesDefault)
	def(&c.ConsumeSubscribers, ConsumeSubscribersDefault)
	def(&c.ConsumeConcurrency, ConsumeConcurrencyDefault)
	def(&c.ScaleInFlight, ScaleInFlightDefault)
	def(&c.ScaleDelayed, ScaleDelayedDefault)
	def(&c.ScaleDeadLetters, ScaleDeadLettersDefault)
	def(&c.ScaleTopics, ScaleTopicsDefault)
	def(&c.ScaleRounds, ScaleRoundsDefault)
	def(&c.PriorityBacklog, PriorityBacklogDefault)
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}
